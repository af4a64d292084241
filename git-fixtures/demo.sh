#!/usr/bin/env bash
# The git-crew loop on a repository this script creates, with a scripted worker (no model
# account needed): init, dispatch, wait, integrate, and the run record in git notes.
#   demo.sh [DIR]
set -eu -o pipefail
here=$(cd "$(dirname "$0")" && pwd)
command -v git-crew >/dev/null || { echo "demo: git-crew is not on PATH (cargo install --path .)" >&2; exit 1; }
# The demo commits; it needs an identity even where git has none configured.
export GIT_AUTHOR_NAME=${GIT_AUTHOR_NAME:-git-crew demo} GIT_AUTHOR_EMAIL=${GIT_AUTHOR_EMAIL:-demo@example.com}
export GIT_COMMITTER_NAME=${GIT_COMMITTER_NAME:-git-crew demo} GIT_COMMITTER_EMAIL=${GIT_COMMITTER_EMAIL:-demo@example.com}
dir=${1:-$(mktemp -d "${TMPDIR:-/tmp}/git-crew-demo.XXXXXX")}
"$here/plain.sh" "$dir/repo"
cd "$dir/repo"
git crew init --human
cat >> .crew/flight.toml <<TOML

default_backend = "script"
[backends.script]
adapter = "command"
argv = ["$here/workers/ok.sh", "{prompt_file}"]
time_budget = "1m"
TOML
echo
echo "\$ git crew dispatch --task routes --scope 'src/routes/**' --verify 'test -f src/routes/crew.rs'"
run=$(git crew dispatch --task routes --scope 'src/routes/**' --prompt "Add the crew route." \
	--verify "test -f src/routes/crew.rs" --json | sed -n 's/.*"run":"\([^"]*\)".*/\1/p')
echo "run $run is working in the background"
echo
echo "\$ git crew wait $run"
git crew wait "$run" --human
echo
echo "\$ git crew integrate $run"
git crew integrate "$run" --human
echo
echo "\$ git log --oneline --graph"
git log --oneline --graph
echo
echo "\$ git notes --ref=crew show HEAD"
git notes --ref=crew show HEAD
echo
echo "The demo repository is $dir/repo"
