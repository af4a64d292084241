#!/bin/sh
# Never finishes (and leaves a child behind, which must die with it).
dir=$TMPDIR
echo "$$" > "$dir/worker-pid"
sleep 300 &
echo "$!" > "$dir/child-pid"
wait
