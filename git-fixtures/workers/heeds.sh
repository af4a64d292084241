#!/bin/sh
# Does what its prompt says, and only that: writes the text of the last line of its
# prompt that starts `WRITE: ` into src/routes/crew.rs (the task prompt's line, or a
# later one the lead's feedback on a retry brings), and reports. Two runs told to write
# different lines conflict; a retry whose feedback says what to write is heard.
set -eu
prompt=$1
line=$(sed -n 's/^WRITE: //p' "$prompt" | tail -n 1)
if [ -z "$line" ]; then line='pub fn crew() {}'; fi
mkdir -p src/routes
printf '%s\n' "$line" > src/routes/crew.rs
printf '## Result\nWrote src/routes/crew.rs: %s\n## How to verify\ncat src/routes/crew.rs\n## Deferred / concerns\nNone.\n' "$line"
