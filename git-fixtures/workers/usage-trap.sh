#!/bin/sh
# Turns its usage file into a trap for whoever reads it — a FIFO, or with TRAP=zero a
# symlink to /dev/zero — then works on without end. Only an unfenced worker can.
set -eu
rm -f "$CREW_USAGE_FILE"
if [ "${TRAP:-fifo}" = zero ]; then
	ln -s /dev/zero "$CREW_USAGE_FILE"
else
	mkfifo "$CREW_USAGE_FILE"
fi
while :; do
	echo working
	sleep 0.2
done
