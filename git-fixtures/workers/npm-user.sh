#!/bin/sh
# A worker on a Node project whose worktree setup ran `npm ci`: it requires the
# devDependency `is-number` (which fails when node_modules is missing) and writes a module
# that uses it, src/even.js.
set -eu
node -e 'require("is-number")' >&2
mkdir -p src
cat > src/even.js <<'JS'
const isNumber = require("is-number");
module.exports = (n) => isNumber(n) && Number(n) % 2 === 0;
JS
printf '## Result\nAdded src/even.js, using is-number.\n## How to verify\nnode -e "process.exit(require(\\"./src/even.js\\")(4) ? 0 : 1)"\n## Deferred / concerns\nNone.\n'
