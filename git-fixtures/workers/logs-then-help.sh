#!/bin/sh
# Prints its log lines first, as agents do, then asks for help.
echo "[info] reading the plan"
echo "[warn] no database named anywhere"
cat <<'REPLY'
NEEDS-HELP: which database should the routes use?
tried: read the plan and the existing code; neither names one
options: sqlite | postgres
leaning: sqlite, it is already a dependency
cost-if-wrong: a migration later
REPLY
