#!/bin/sh
# Prints its log lines first, as agents do, then asks for help as needs-help.sh does.
echo "[info] reading the plan"
echo "[warn] no database named anywhere"
exec "$(dirname "$0")/needs-help.sh"
