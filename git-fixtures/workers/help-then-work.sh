#!/bin/sh
# Asks for help on its first turn; resumed with the lead's advice, it does the work.
# Launch: help-then-work.sh PROMPT_FILE; resume: help-then-work.sh --resume SESSION PROMPT_FILE
set -eu
if [ "$1" = "--resume" ]; then
	session=$2 prompt=$3
else
	session="S-$CREW_RUN" prompt=$1
	echo "$session" > "$CREW_SESSION_FILE"
fi
if grep -q "The lead answers your NEEDS-HELP" "$prompt"; then
	advice=$(grep -A2 "The lead answers" "$prompt" | tail -n 1)
	mkdir -p src/routes && echo "$advice" > src/routes/store.rs
	printf '## Result\nResumed session %s; used the advice.\n## How to verify\ncat src/routes/store.rs\n## Deferred / concerns\nNone.\n' "$session"
else
	printf 'NEEDS-HELP: which store?\ntried: reading the code\noptions: sqlite | postgres\nleaning: sqlite\ncost-if-wrong: a migration\n'
fi
