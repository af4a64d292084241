#!/bin/sh
# Does its task and writes the check its verify runs (src/routes/check.sh EXIT [REWARD]):
# code of the worker's that exits EXIT after writing {"reward": REWARD} to
# $CREW_VERIFIER_DIR/reward.json when REWARD is given — a verifier that fails and forges
# a pass. Its footer claims success.
set -eu
mkdir -p src/routes
echo "pub fn crew() {}" > src/routes/crew.rs
cat > src/routes/check.sh <<'CHECK'
if [ -n "${2:-}" ]; then
	printf '{"reward": %s}\n' "$2" > "$CREW_VERIFIER_DIR/reward.json"
fi
exit "$1"
CHECK
printf '## Result\nAdded src/routes/crew.rs; all checks pass.\n## How to verify\nsh src/routes/check.sh 0\n## Deferred / concerns\nNone.\n'
