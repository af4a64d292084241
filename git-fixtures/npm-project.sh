#!/usr/bin/env bash
# crew-repo.sh with a Node project on top: a package.json whose devDependency is
# is-number@7.0.0, its committed package-lock.json, node_modules/ ignored:
# npm-project.sh DIR
set -eu -o pipefail
here=$(cd "$(dirname "$0")" && pwd)
"$here/crew-repo.sh" "$1"
cd "$1"
cat > package.json <<'JSON'
{
  "name": "crew-npm-project",
  "version": "1.0.0",
  "private": true,
  "devDependencies": {
    "is-number": "7.0.0"
  }
}
JSON
cat > package-lock.json <<'JSON'
{
  "name": "crew-npm-project",
  "version": "1.0.0",
  "lockfileVersion": 3,
  "requires": true,
  "packages": {
    "": {
      "name": "crew-npm-project",
      "version": "1.0.0",
      "devDependencies": {
        "is-number": "7.0.0"
      }
    },
    "node_modules/is-number": {
      "version": "7.0.0",
      "resolved": "https://registry.npmjs.org/is-number/-/is-number-7.0.0.tgz",
      "integrity": "sha512-41Cifkg6e8TylSpdtTpeLVMqvSBEVzTttHvERD741+pnZ8ANv0004MRL43QKPDlK9cGvNp6NZWZUBlbGXYxxng==",
      "dev": true,
      "license": "MIT",
      "engines": {
        "node": ">=0.12.0"
      }
    }
  }
}
JSON
echo "node_modules/" > .gitignore
git add package.json package-lock.json .gitignore
git commit -q -m "node project"
