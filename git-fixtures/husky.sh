#!/usr/bin/env bash
# plain.sh set up the way husky does it: core.hooksPath = .husky, hooks committed there,
# written without a shebang: husky.sh DIR
set -eu -o pipefail
here=$(cd "$(dirname "$0")" && pwd)
"$here/plain.sh" "$1"
cd "$1"
mkdir -p .husky
printf 'echo ran >> "$(git rev-parse --git-common-dir)/husky-ran"\n' > .husky/pre-commit
chmod 755 .husky/pre-commit
git add .husky
git commit -q -m "husky"
git config core.hooksPath .husky
