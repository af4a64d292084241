#!/bin/sh
# Never finishes (and leaves a child behind, which must die with it).
dir=$(dirname "$CREW_MANIFEST")
echo "$$" > "$dir/worker-pid"
sleep 300 &
echo "$!" > "$dir/child-pid"
wait
