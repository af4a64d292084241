#!/bin/sh
# A worker that changes a submodule (vendor/lib, initialised in its worktree): it commits
# inside the submodule, then records the new commit in the superproject.
set -eu
test -f vendor/lib/lib.txt || { echo "the submodule is not checked out" >&2; exit 1; }
cd vendor/lib
echo v2 > lib.txt
git add lib.txt
git -c user.name=w -c user.email=w@example.com commit -q -m "lib v2" >&2
cd ../..
git add vendor/lib
git commit -q -m "bump vendor/lib" >&2
cat <<REPLY
## Result
vendor/lib is at v2.

## How to verify
grep -q v2 vendor/lib/lib.txt

## Deferred / concerns
None.
REPLY
