#!/bin/sh
# Leaves a change outside its scope uncommitted: the supervisor's commit is refused.
# With $HANG set it then works on past its time budget.
set -eu
echo "changed by a worker" >> README.md
if [ -n "${HANG:-}" ]; then sleep 300; fi
printf '## Result\nEdited the README.\n## How to verify\ncat README.md\n## Deferred / concerns\nNone.\n'
