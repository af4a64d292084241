#!/bin/sh
# A review that edits a file although its role forbids it.
echo "nit" >> src/lib.rs
printf '## Result\nReviewed.\n## How to verify\nread it\n## Deferred / concerns\nNone.\n'
