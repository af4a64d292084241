#!/bin/sh
# Takes two seconds, then does its task and reports.
set -eu
sleep 2
mkdir -p src/routes && echo "slow $CREW_RUN" > "src/routes/$CREW_TASK.rs"
printf '## Result\nDone slowly.\n## How to verify\ntrue\n## Deferred / concerns\nNone.\n'
