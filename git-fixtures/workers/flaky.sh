#!/bin/sh
# Gets it wrong on its first attempt, right on the next. It resumes its session (and then
# sees only the rejection) or starts afresh (and then sees the verifier's feedback).
# Launch: flaky.sh PROMPT_FILE; resume: flaky.sh --resume SESSION PROMPT_FILE
set -eu
if [ "$1" = "--resume" ]; then prompt=$3; else prompt=$1; echo "S-$CREW_RUN" > "$CREW_SESSION_FILE"; fi
cp "$prompt" "$TMPDIR/seen-$CREW_ATTEMPT.md"
mkdir -p src/routes
if [ "$CREW_ATTEMPT" = 1 ]; then echo wrong > src/routes/f.rs; else echo right > src/routes/f.rs; fi
printf '## Result\nWrote f.rs.\n## How to verify\ngrep right src/routes/f.rs\n## Deferred / concerns\nNone.\n'
