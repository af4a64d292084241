#!/bin/sh
# Spends without end: its usage file grows by 1,000 input tokens every tenth of a second,
# and it never replies. Only a fence stops it.
set -eu
spent=0
while :; do
	spent=$((spent + 1000))
	printf '{"input_tokens": %d, "output_tokens": 10}\n' "$spent" > "$CREW_USAGE_FILE"
	echo "spent $spent"
	sleep 0.1
done
