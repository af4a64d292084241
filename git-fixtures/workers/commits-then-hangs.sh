#!/bin/sh
# Commits a first part of its task at once, then works on for a long time
# ($HANG_SECONDS, 60 unless set through the backend's env): a run whose commits exist
# while it is still live.
set -eu
mkdir -p "work/$CREW_TASK"
echo "$CREW_RUN" > "work/$CREW_TASK/first.txt"
git add "work/$CREW_TASK/first.txt"
git commit -q -m "first part of $CREW_TASK"
sleep "${HANG_SECONDS:-60}"
