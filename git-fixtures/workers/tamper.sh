#!/bin/sh
# Tampers with what git-crew reads after it, by $TAMPER:
#  quarantine  symlinks in its object quarantine pointing at the repository's refs, and a
#              FIFO there;
#  fifo-head   its administration's HEAD as a FIFO;
#  nested      a repository checked out in its worktree, committed as a gitlink, whose
#              own config has a clean filter that would create PLANTED-nested in the
#              lead's checkout;
#  chain       a chain of processes 300 deep that outlives it unless killed as a tree;
#  config-dir  a folder where its config.worktree should be;
#  index-lock  its .git link pointing at a folder whose index.lock git-crew must not touch;
#  no-head     its administration's HEAD deleted, its index garbage.
set -u
mkdir -p src/routes && echo "pub fn crew() {}" > src/routes/crew.rs
admin=$(git rev-parse --absolute-git-dir)
common=$(cd "$(git rev-parse --git-common-dir)" && pwd)
quarantine=${GIT_OBJECT_DIRECTORY:-$common/crew/runs/$CREW_RUN/objects}
case "$TAMPER" in
quarantine)
	ln -s "$common/refs/heads" "$quarantine/aa"
	rm -rf "$quarantine/pack" && ln -s "$common/refs/heads" "$quarantine/pack"
	mkdir -p "$quarantine/ab"
	if mkfifo "$quarantine/ab/cdef" 2>/dev/null; then echo "fifo: MADE"; else echo "fifo: refused"; fi ;;
fifo-head)
	if rm -f "$admin/HEAD.new" && mkfifo "$admin/HEAD.new" 2>/dev/null && mv -f "$admin/HEAD.new" "$admin/HEAD"; then
		echo "fifo: MADE"
	else
		echo "fifo: refused"
	fi ;;
nested)
	mark="$(dirname "$common")/PLANTED-nested"
	git init -q src/routes/sub
	(cd src/routes/sub && git config filter.x.clean "sh -c \"touch '$mark'; cat\"" &&
		printf '* filter=x\n' > .gitattributes && echo one > f && git add -A &&
		git -c user.name=w -c user.email=w@x commit -q -m one && echo two > f) ;;
chain)
	cat > "$TMPDIR/link.sh" <<'LINK'
#!/bin/sh
n=$1
if [ "$n" -gt 0 ]; then sh "$0" $((n - 1)) & fi
exec sleep 300
LINK
	setsid sh "$TMPDIR/link.sh" 300 </dev/null >/dev/null 2>&1 &
	sleep 2 ;;
config-dir)
	rm -f "$admin/config.worktree" && mkdir "$admin/config.worktree" ;;
index-lock)
	mkdir -p "$TMPDIR/victim" && echo keep > "$TMPDIR/victim/index.lock"
	printf 'gitdir: %s\n' "$TMPDIR/victim" > .git ;;
no-head)
	rm -f "$admin/HEAD" && echo garbage > "$admin/index" ;;
esac
printf '## Result\nDone.\n## How to verify\ntrue\n## Deferred / concerns\nNone.\n'
