#!/usr/bin/env bash
# A repository (DIR/repo) and a linked worktree (DIR/wt) on branch crew/TASK/RUN carrying
# a run identity set by hand with `git config --worktree`, as dispatch sets it:
# crew-worktree.sh DIR RUN TASK ROLE [SCOPE...]
set -eu -o pipefail
here=$(cd "$(dirname "$0")" && pwd)
dir=$1 run=$2 task=$3 role=$4
shift 4
"$here/plain.sh" "$dir/repo"
cd "$dir/repo"
git config extensions.worktreeConfig true
git worktree add -q -b "crew/$task/$run" "$dir/wt"
cd "$dir/wt"
git config --worktree crew.run "$run"
git config --worktree crew.task "$task"
git config --worktree crew.role "$role"
for glob in "$@"; do
	git config --worktree --add crew.scope "$glob"
done
# The run's seal, as dispatch writes it: what post-merge and integrate audit against.
scope=""
for glob in "$@"; do
	scope="$scope${scope:+,}\"$glob\""
done
base=$(git rev-parse HEAD)
seal=$(printf '{"run":"%s","task":"%s","role":"%s","scope":[%s],"base":"%s","base_ref":"main","branch":"crew/%s/%s","worktree":"%s","verify_command":null}' \
	"$run" "$task" "$role" "$scope" "$base" "$task" "$run" "$dir/wt" | git hash-object -w --stdin)
git update-ref "refs/crew/sealed/$run" "$seal"
