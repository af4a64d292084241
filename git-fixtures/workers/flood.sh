#!/bin/sh
# Floods stdout ($FLOOD_MB megabytes of `yes`, else forever), then replies with a
# footer — the end of a reply must survive any cut.
mkdir -p src/routes && echo "pub fn crew() {}" > src/routes/crew.rs
if [ -n "${FLOOD_MB:-}" ]; then
	yes "a line a flooding worker prints" | head -c "${FLOOD_MB}000000"
	printf '\n## Result\nFlooded, then replied.\n## How to verify\ntrue\n## Deferred / concerns\nNone.\n'
else
	yes "a line a flooding worker prints"
fi
