#!/bin/sh
# Leaves a daemon behind that drops every trace of its run: no CREW_RUN in its
# environment, its own session (setsid), double-forked away from the worker. It writes
# its pid to $TMPDIR/daemon-pid and then lives on. With DAEMON_STAY set the worker waits
# (so the daemon is alive while the run is); otherwise it replies at once.
set -eu
mkdir -p src/routes
echo "pub fn crew() {}" > src/routes/crew.rs
pidfile="$TMPDIR/daemon-pid"
env -u CREW_RUN -u CREW_TASK setsid sh -c "sh -c 'echo \$\$ > $pidfile; exec sleep 1000' &" </dev/null >/dev/null 2>&1
while [ ! -s "$pidfile" ]; do sleep 0.05; done
if [ -n "${DAEMON_STAY:-}" ]; then sleep 1000; fi
printf '## Result\nDone, with a daemon.\n## How to verify\ntrue\n## Deferred / concerns\nNone.\n'
