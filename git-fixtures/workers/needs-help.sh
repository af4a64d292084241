#!/bin/sh
# Asks for help instead of guessing.
cat <<'REPLY'
NEEDS-HELP: which database should the routes use?
tried: read the plan and the existing code; neither names one
options: sqlite | postgres
leaning: sqlite, it is already a dependency
cost-if-wrong: a migration later
REPLY
