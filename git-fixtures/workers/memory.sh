#!/bin/sh
# A standing worker with a memory of earlier tasks: a fresh start opens a session (its id
# goes to CREW_SESSION_FILE); a resume (argv: --resume SESSION PROMPT_FILE) continues that
# session. Either way it writes work/<task>.txt naming the session it ran in.
set -eu
if [ "${1:-}" = "--resume" ]; then
	session=$2
else
	session="mem-$CREW_RUN"
fi
echo "$session" > "$CREW_SESSION_FILE"
mkdir -p work
echo "session $session" > "work/$CREW_TASK.txt"
printf '## Result\nWrote work/%s.txt in session %s.\n## How to verify\ntest -f work/%s.txt\n## Deferred / concerns\nNone.\n' "$CREW_TASK" "$session" "$CREW_TASK"
