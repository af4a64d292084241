#!/bin/sh
# A worker that does its task inside its scope, commits nothing itself (the supervisor
# commits for it) and replies on stdout with a complete footer.
set -eu
mkdir -p src/routes
echo "pub fn crew() {}" > src/routes/crew.rs
cat <<REPLY
Working on $CREW_TASK (run $CREW_RUN, attempt $CREW_ATTEMPT) in $CREW_WORKTREE.

## Result
Added src/routes/crew.rs.

## How to verify
test -f src/routes/crew.rs

## Deferred / concerns
None.
REPLY
