#!/bin/sh
# A worker that does what real agents do between edits: builds a Rust crate with cargo
# and runs a Python test suite, both writing their caches (target/, __pycache__) in the
# worktree and in $TMPDIR. Under the write fence both must still work.
set -eu
mkdir -p src/routes/app/src src/routes/py
cat > src/routes/app/Cargo.toml <<'TOML'
[package]
name = "crew-app"
version = "0.1.0"
edition = "2021"
TOML
echo 'fn main() { println!("built"); }' > src/routes/app/src/main.rs
printf 'target/\nCargo.lock\n' > src/routes/app/.gitignore
cat > src/routes/py/test_crew.py <<'PY'
import tempfile, unittest
class T(unittest.TestCase):
    def test_tmp(self):
        with tempfile.NamedTemporaryFile() as f:
            f.write(b"x")
PY
printf '__pycache__/\n' > src/routes/py/.gitignore
cargo build --offline --quiet --manifest-path src/routes/app/Cargo.toml
./src/routes/app/target/debug/crew-app
(cd src/routes/py && env -u PYTHONDONTWRITEBYTECODE python3 -m unittest -q 2>&1)
test -d src/routes/py/__pycache__ && echo "pycache: written"
cat <<REPLY

## Result
Built the crate and ran the tests.

## How to verify
cargo build --manifest-path src/routes/app/Cargo.toml

## Deferred / concerns
None.
REPLY
