#!/usr/bin/env bash
# plain.sh with git-crew initialised and one command backend per scripted worker of
# git-fixtures/workers (backend `ok` runs workers/ok.sh, and so on): crew-repo.sh DIR
# [BASE], where BASE is the fixture it starts from (plain.sh unless given)
set -eu -o pipefail
here=$(cd "$(dirname "$0")" && pwd)
"$here/${2:-plain.sh}" "$1"
cd "$1"
git crew init >/dev/null
{
	echo 'version = 1'
	echo 'default_backend = "ok"'
	for worker in "$here"/workers/*.sh; do
		name=$(basename "$worker" .sh)
		echo "[backends.$name]"
		echo 'adapter = "command"'
		echo "argv = [\"$worker\", \"{prompt_file}\"]"
		if grep -q -- "--resume SESSION" "$worker"; then
			echo "resume_argv = [\"$worker\", \"--resume\", \"{session}\", \"{prompt_file}\"]"
		fi
		echo 'concurrency = 2'
		echo 'time_budget = "30s"'
	done
} > .crew/flight.toml
git add .crew/flight.toml
git commit -q -m "crew config"
