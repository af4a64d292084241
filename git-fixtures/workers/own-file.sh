#!/bin/sh
# A worker that writes one file named after its task, work/<task>.txt, and replies with a
# complete footer: many of them can run (and be integrated) side by side.
set -eu
mkdir -p work
echo "done by $CREW_RUN" > "work/$CREW_TASK.txt"
printf '## Result\nWrote work/%s.txt.\n## How to verify\ntest -f work/%s.txt\n## Deferred / concerns\nNone.\n' "$CREW_TASK" "$CREW_TASK"
