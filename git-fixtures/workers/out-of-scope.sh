#!/bin/sh
# Leaves a change outside its scope uncommitted: the supervisor's commit is refused.
set -eu
echo "changed by a worker" >> README.md
printf '## Result\nEdited the README.\n## How to verify\ncat README.md\n## Deferred / concerns\nNone.\n'
