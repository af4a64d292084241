#!/bin/sh
# Reports what it spent through $CREW_USAGE_FILE ($SPEND_USAGE, else a fixed usage), then
# does the task like ok.sh.
set -eu
printf '%s\n' "${SPEND_USAGE:-{\"input_tokens\": 12000, \"cached_input_tokens\": 2000, \"output_tokens\": 800, \"reasoning_tokens\": 100\}}" > "$CREW_USAGE_FILE"
mkdir -p src/routes
echo "pub fn crew() {}" > src/routes/crew.rs
cat <<REPLY
## Result
Added src/routes/crew.rs.

## How to verify
test -f src/routes/crew.rs

## Deferred / concerns
None.
REPLY
