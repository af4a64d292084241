#!/usr/bin/env bash
# plain.sh plus a pre-commit hook written in Python, which cannot take a shell block:
# python-hook.sh DIR
set -eu -o pipefail
here=$(cd "$(dirname "$0")" && pwd)
"$here/plain.sh" "$1"
cat > "$1/.git/hooks/pre-commit" <<'HOOK'
#!/usr/bin/env python3
import subprocess
common = subprocess.check_output(["git", "rev-parse", "--git-common-dir"], text=True).strip()
open(common + "/python-hook-ran", "a").write("ran\n")
HOOK
chmod 755 "$1/.git/hooks/pre-commit"
