#!/bin/sh
# Forgets the footer on its first attempt; the corrective retry gets it.
set -eu
if [ "$CREW_ATTEMPT" = 1 ]; then
	mkdir -p src/routes && echo "x" > src/routes/late.rs
	echo "I did the work but wrote no report."
else
	grep -q "Do not redo the work" "$1"
	printf '## Result\nAdded late.rs.\n## How to verify\ntest -f src/routes/late.rs\n## Deferred / concerns\nNone.\n'
fi
