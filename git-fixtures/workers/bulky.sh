#!/bin/sh
# Leaves big files, by $BULKY: `sparse` leaves a sparse file of $SIZE (30G) in its scope,
# uncommitted, for the supervisor to commit; `commit` commits $SIZE (5M) of zeros itself;
# `pack` does the same with git writing the blob into a pack in the run's quarantine (as
# it does for any file over core.bigFileThreshold). Then it replies with a full footer.
set -eu
mkdir -p src/routes
case "${BULKY:-sparse}" in
sparse)
	truncate -s "${SIZE:-30G}" src/routes/big.bin ;;
commit)
	head -c "${SIZE:-5M}" /dev/zero > src/routes/big.bin
	git add src/routes/big.bin && git commit -q -m big && echo "commit: ok" ;;
pack)
	head -c "${SIZE:-5M}" /dev/zero > src/routes/big.bin
	git -c core.bigFileThreshold=1k add src/routes/big.bin && git commit -q -m big
	common=$(cd "$(git rev-parse --git-common-dir)" && pwd)
	ls "${GIT_OBJECT_DIRECTORY:-$common/crew/runs/$CREW_RUN/objects}/pack" | grep -q '\.pack$' && echo "pack: written" ;;
esac
printf '## Result\nLeft src/routes/big.bin.\n## How to verify\ntrue\n## Deferred / concerns\nNone.\n'
