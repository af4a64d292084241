#!/usr/bin/env bash
# plain.sh with its *.bin files in git LFS (`git lfs install --local`, `git lfs track`)
# and one of them committed, assets/logo.bin: lfs-repo.sh DIR
set -eu -o pipefail
here=$(cd "$(dirname "$0")" && pwd)
"$here/plain.sh" "$1"
cd "$1"
git lfs install --local >/dev/null
git lfs track '*.bin' >/dev/null
mkdir -p assets
printf 'logo v1\n' > assets/logo.bin
git add .gitattributes assets/logo.bin
git commit -q -m "assets in LFS"
