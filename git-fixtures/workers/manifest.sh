#!/bin/sh
# Writes its reply to the manifest file; stdout is noise.
set -eu
echo "lots of chatter that is not the reply"
printf 'Report.\n## Result\nFrom the manifest.\n## How to verify\ntrue\n## Deferred / concerns\nNone.\n' > "$CREW_MANIFEST"
mkdir -p src/routes && echo "m" > src/routes/m.rs
