#!/bin/sh
# Takes two seconds (or $SLOW_SECONDS, set through the backend's env), then does its task
# and reports.
set -eu
sleep "${SLOW_SECONDS:-2}"
mkdir -p src/routes && echo "slow $CREW_RUN" > "src/routes/$CREW_TASK.rs"
printf '## Result\nDone slowly.\n## How to verify\ntrue\n## Deferred / concerns\nNone.\n'
