#!/usr/bin/env bash
# plain.sh plus a pre-commit hook of the project's own that must keep running and that
# ends with `exit 0` (so anything appended after it would never run): existing-hook.sh DIR
set -eu -o pipefail
here=$(cd "$(dirname "$0")" && pwd)
"$here/plain.sh" "$1"
cat > "$1/.git/hooks/pre-commit" <<'HOOK'
#!/bin/sh
# the project's own check
echo ran >> "$(git rev-parse --git-common-dir)/own-hook-ran"
exit 0
HOOK
chmod 755 "$1/.git/hooks/pre-commit"
