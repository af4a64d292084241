#!/bin/sh
# Starts a background process that leaves the run's session (as a careless dev server
# would), waits until it has, then reports.
setsid -f sleep 300 </dev/null >/dev/null 2>&1
sleep 0.5
printf '## Result\nStarted a server.\n## How to verify\ntrue\n## Deferred / concerns\nNone.\n'
