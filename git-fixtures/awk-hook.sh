#!/usr/bin/env bash
# plain.sh plus a pre-commit hook written for another interpreter (awk), which cannot
# take a shell block: awk-hook.sh DIR
set -eu -o pipefail
here=$(cd "$(dirname "$0")" && pwd)
"$here/plain.sh" "$1"
awk=$(command -v awk)
cat > "$1/.git/hooks/pre-commit" <<HOOK
#!$awk -f
BEGIN { system("echo ran >> \"\$(git rev-parse --git-common-dir)/awk-hook-ran\"") }
HOOK
chmod 755 "$1/.git/hooks/pre-commit"
