#!/bin/sh
# Gets it wrong on its first attempt, right on the next; it cannot resume a session, so
# continuation restarts it with the verifier's feedback. Launch: flaky-fresh.sh PROMPT_FILE
set -eu
prompt=$1
cp "$prompt" "$TMPDIR/seen-$CREW_ATTEMPT.md"
mkdir -p src/routes
if [ "$CREW_ATTEMPT" = 1 ]; then echo wrong > src/routes/f.rs; else echo right > src/routes/f.rs; fi
printf '## Result\nWrote f.rs.\n## How to verify\ngrep right src/routes/f.rs\n## Deferred / concerns\nNone.\n'
