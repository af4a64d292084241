#!/bin/sh
# A worker that needs what its worktree's setup made: deps/ready, in a folder git ignores.
# It copies it into its scope (src/routes/from-setup.txt) and replies; without it, it
# exits with no reply.
set -eu
if ! test -f deps/ready; then
	echo "deps/ready is missing: the worktree was not set up" >&2
	exit 3
fi
mkdir -p src/routes
cp deps/ready src/routes/from-setup.txt
printf '## Result\nCopied deps/ready into src/routes/from-setup.txt.\n## How to verify\ngrep -q ready src/routes/from-setup.txt\n## Deferred / concerns\nNone.\n'
