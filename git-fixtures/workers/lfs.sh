#!/bin/sh
# A worker in a repository whose *.bin files live in git LFS (lfs-repo.sh): adds
# assets/new.bin, changes assets/logo.bin and commits both through git's LFS filter,
# then leaves assets/left.bin for the supervisor's commit. With $LFS=false-name it also
# plants a file in the LFS store git-lfs writes to (`lfs.storage`, else the repository's
# `lfs/`, as it sees it) whose content is not what its name says, and overwrites the
# repository's LFS object of the old logo there; the overwrite is reported as
# `existing: refused|WROTE`.
set -eu
mkdir -p assets
seq 1 200 | sed "s/^/new asset $CREW_RUN line /" > assets/new.bin
printf 'logo v2 %s\n' "$CREW_RUN" > assets/logo.bin
git add assets/new.bin assets/logo.bin
git commit -q -m "A new asset, and the logo's second version"
printf 'left asset %s\n' "$CREW_RUN" > assets/left.bin
case "${LFS:-}" in
false-name)
	common=$(cd "$(git rev-parse --git-common-dir)" && pwd)
	store=$(git config lfs.storage || echo "$common/lfs")
	fake=$(printf 'fake asset\n' | sha256sum | cut -c1-64)
	dir="$store/objects/$(echo "$fake" | cut -c1-2)/$(echo "$fake" | cut -c3-4)"
	mkdir -p "$dir"
	printf 'not the fake asset\n' > "$dir/$fake" && echo "planted $fake"
	old=$(git show HEAD~1:assets/logo.bin | sed -n 's/^oid sha256://p')
	file="$store/objects/$(echo "$old" | cut -c1-2)/$(echo "$old" | cut -c3-4)/$old"
	if printf 'EVIL\n' > "$file" 2>/dev/null; then
		echo "existing: WROTE"
	else
		echo "existing: refused"
	fi ;;
esac
printf '## Result\nDone.\n## How to verify\ntrue\n## Deferred / concerns\nNone.\n'
