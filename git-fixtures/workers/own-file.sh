#!/bin/sh
# A worker that writes one file named after its task, work/<task>.txt, and replies with a
# complete footer (its Deferred section names a follow-on): many of them can run (and be
# integrated) side by side.
set -eu
mkdir -p work
echo "done by $CREW_RUN" > "work/$CREW_TASK.txt"
printf '## Result\nWrote work/%s.txt.\n## How to verify\ntest -f work/%s.txt\n## Deferred / concerns\nwork/%s.txt could be indexed.\n' "$CREW_TASK" "$CREW_TASK" "$CREW_TASK"
