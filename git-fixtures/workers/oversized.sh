#!/bin/sh
# On its first attempt, writes more than git-crew reads of each file it hands in: a
# 64 MiB session file, a 100 KiB manifest and a 100 KiB usage file; on the corrective
# attempt that follows, a plain reply. Its task is done either way.
set -eu
mkdir -p src/routes
echo "pub fn crew() {}" > src/routes/crew.rs
if [ "$CREW_ATTEMPT" = 1 ]; then
	head -c 67108864 /dev/zero | tr '\0' 's' > "$CREW_SESSION_FILE"
	head -c 102400 /dev/zero | tr '\0' 'm' > "$CREW_MANIFEST"
	{ printf '{"input_tokens": 1'; head -c 102400 /dev/zero | tr '\0' '0'; printf '}'; } > "$CREW_USAGE_FILE"
	exit 0
fi
printf '## Result\nAdded src/routes/crew.rs.\n## How to verify\ntrue\n## Deferred / concerns\nNone.\n' > "$CREW_MANIFEST"
