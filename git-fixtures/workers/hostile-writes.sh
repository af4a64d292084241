#!/bin/sh
# A worker that tries to write what it must not: the lead's checkout, another run's
# worktree, the repository's hooks, refs/heads/main (by file and by git), the ledger
# ref, its own live pointer and run record, the shared config; and to signal its
# supervisor, outside the fence. Each attempt's result is
# reported as `<target>: refused|WROTE`; it then does its own task inside its scope.
set -u
common=$(cd "$CREW_WORKTREE/../../.." && pwd)
lead=$(cd "$common/.." && pwd)
try() {
	name=$1
	shift
	if "$@" 2>/dev/null; then echo "$name: WROTE"; else echo "$name: refused"; fi
}
try lead-checkout sh -c "echo pwned >> '$lead/README.md'"
for other in "$common"/crew/worktrees/*; do
	[ "$other" = "$CREW_WORKTREE" ] && continue
	try other-worktree sh -c "echo pwned >> '$other/README.md'"
done
try hooks sh -c "echo 'exit 0' > '$common/hooks/pre-commit'"
try main-ref-file sh -c "echo 0000000000000000000000000000000000000000 > '$common/refs/heads/main'"
try main-ref-git git update-ref refs/heads/main HEAD
try ledger-ref git update-ref refs/notes/crew-ledger HEAD
try live-pointer sh -c "echo '{}' > '$common/crew/live/$CREW_RUN.json'"
try run-record sh -c "echo '{}' > '$common/crew/runs/$CREW_RUN.json'"
try seal git update-ref "refs/crew/sealed/$CREW_RUN" HEAD
try shared-config git config --local core.hooksPath /tmp
try signal-supervisor kill -0 "$PPID"
try tmpdir sh -c "echo ok > '$TMPDIR/x'"
mkdir -p src/routes
echo "pub fn crew() {}" > src/routes/crew.rs
git add -A && git commit -q -m "crew work" && echo "commit: ok" || echo "commit: FAILED"
printf '## Result\nTried.\n## How to verify\ntrue\n## Deferred / concerns\nNone.\n'
