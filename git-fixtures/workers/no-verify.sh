#!/bin/sh
# Commits outside its scope with --no-verify, skipping the hook: the branch audit catches it.
set -eu
echo "sneaked in" >> README.md
git commit -q --no-verify -am "sneak past the hook"
printf '## Result\nDone.\n## How to verify\ntrue\n## Deferred / concerns\nNone.\n'
