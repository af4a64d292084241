#!/usr/bin/env bash
# plain.sh set up the way husky 9 leaves a repository after `npm install` (its `prepare`
# script): the project's hook in .husky/pre-commit (committed), and what husky generates
# in .husky/_ (ignored): core.hooksPath = .husky/_, a runner `h` that runs
# .husky/<hook>, and one stub per hook name that calls the runner. Running it again with
# --regenerate DIR writes .husky/_ again from scratch, as `npx husky` does.
# husky9.sh DIR | husky9.sh --regenerate DIR
set -eu -o pipefail
here=$(cd "$(dirname "$0")" && pwd)
regenerate() {
	git config core.hooksPath .husky/_
	mkdir -p .husky/_
	printf '*' > .husky/_/.gitignore
	cat > .husky/_/h <<'RUNNER'
#!/usr/bin/env sh
hook=$(basename "$0")
script=$(dirname "$(dirname "$0")")/$hook
[ -f "$script" ] || exit 0
export PATH="node_modules/.bin:$PATH"
sh -e "$script" "$@"
RUNNER
	for hook in pre-commit pre-merge-commit prepare-commit-msg commit-msg post-commit \
		applypatch-msg pre-applypatch post-applypatch pre-rebase post-rewrite \
		post-checkout post-merge pre-push pre-auto-gc; do
		printf '#!/usr/bin/env sh\n. "$(dirname "$0")/h"' > ".husky/_/$hook"
		chmod 755 ".husky/_/$hook"
	done
}
if [ "$1" = --regenerate ]; then
	cd "$2"
	regenerate
	exit 0
fi
"$here/plain.sh" "$1"
cd "$1"
mkdir -p .husky
printf 'echo "husky: pre-commit ran"\n' > .husky/pre-commit
git add .husky
git commit -q -m "husky"
regenerate
