#!/bin/sh
# A worker that edits files as its prompt says, one `EDIT <path>:<line> <text>` line of
# the prompt each (that line of the file replaced by the text; the file, or the lines up
# to it, made when missing), and replies with a complete footer; the supervisor commits
# the edits for it. Runs told to edit the same lines of a file conflict; runs told to edit
# lines far apart merge. With a `HELP` line it asks for help once its edits are made
# instead: a live run with commits, parked until the lead answers. With `HOLD <seconds>`
# it commits its edits itself, then keeps working that long: a run still working, whose
# commits are in its quarantine.
set -eu
grep '^EDIT ' "$1" | while read -r _ spec text; do
	path=${spec%:*}
	line=${spec##*:}
	mkdir -p "$(dirname "$path")"
	[ -f "$path" ] || : >"$path"
	awk -v n="$line" -v t="$text" '
		NR == n { print t; next }
		{ print }
		END { for (i = NR + 1; i <= n; i++) print (i == n ? t : "") }
	' "$path" >"$path.edit"
	mv "$path.edit" "$path"
done
hold=$(sed -n 's/^HOLD \([0-9]*\)$/\1/p' "$1")
if [ -n "$hold" ]; then
	git add -A
	git commit -q -m "edits so far"
	sleep "$hold"
fi
if grep -q '^HELP' "$1"; then
	cat <<'REPLY'
NEEDS-HELP: keep the edits or take them back?
tried: made the edits asked for
options: keep | take back
leaning: keep
cost-if-wrong: an edit to undo
REPLY
	exit 0
fi
printf '## Result\nEdited as asked.\n## How to verify\ntrue\n## Deferred / concerns\nNone.\n'
