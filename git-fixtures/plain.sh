#!/usr/bin/env bash
# A small repository with one commit: plain.sh DIR
set -eu -o pipefail
dir=$1
git init -q -b main "$dir"
cd "$dir"
mkdir -p src/routes docs
printf 'pub fn routes() {}\n' > src/routes/a.rs
printf 'pub mod routes;\n' > src/lib.rs
printf '# Docs\n' > docs/guide.md
printf '# Project\n' > README.md
printf '#!/bin/sh\necho build\n' > build.sh
git add -A
git commit -q -m "initial"
