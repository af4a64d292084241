#!/bin/sh
# A worker that edits files as its prompt says, one `EDIT <path>:<line> <text>` line of
# the prompt each (that line of the file replaced by the text; the file, or the lines up
# to it, made when missing), commits nothing itself and replies with a complete footer.
# Runs told to edit the same lines of a file conflict; runs told to edit lines far apart
# merge.
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
printf '## Result\nEdited as asked.\n## How to verify\ntrue\n## Deferred / concerns\nNone.\n'
