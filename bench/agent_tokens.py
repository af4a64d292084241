#!/usr/bin/env python3
"""How much of a lead's context the agent files take: runs `git crew init --agents` in a
new repository and counts the tokens of the skill and of the AGENTS.md section with the
`gpt-tokenizer` npm package (o200k_base, the encoding of OpenAI's current models; Claude's
tokenizer is not published, and counts within about 15% of it on English text).

    cargo build --release
    python3 bench/agent_tokens.py [--crew target/release/git-crew]

Installs gpt-tokenizer into ~/.cache/git-crew/bench-npm on first use.
"""

import argparse
import json
import os
import subprocess
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
NPM = Path.home() / ".cache" / "git-crew" / "bench-npm"


def tokenizer():
    if not (NPM / "node_modules" / "gpt-tokenizer").is_dir():
        subprocess.run(
            ["npm", "install", "--no-audit", "--no-fund", "--prefix", str(NPM), "gpt-tokenizer@4"],
            check=True,
            stdout=subprocess.DEVNULL,
        )
    return NPM / "node_modules"


def count(texts):
    script = (
        "const {encode} = require('gpt-tokenizer');"
        "const texts = JSON.parse(require('fs').readFileSync(0, 'utf8'));"
        "console.log(JSON.stringify(texts.map(t => encode(t).length)));"
    )
    out = subprocess.run(
        ["node", "-e", script],
        input=json.dumps(texts),
        capture_output=True,
        text=True,
        check=True,
        env={**os.environ, "NODE_PATH": str(tokenizer())},
    )
    return json.loads(out.stdout)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--crew", default=str(ROOT / "target" / "release" / "git-crew"))
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        repo = Path(tmp) / "repo"
        subprocess.run(["git", "init", "-q", str(repo)], check=True)
        subprocess.run([args.crew, "-C", str(repo), "init", "--agents", "--json"], check=True,
                       stdout=subprocess.DEVNULL)
        skill = (repo / ".claude/skills/git-crew/SKILL.md").read_text()
        agents = (repo / "AGENTS.md").read_text()
    tokens = count([skill, agents])
    print(json.dumps({
        "skill": {"bytes": len(skill.encode()), "words": len(skill.split()), "tokens": tokens[0]},
        "agents_md": {"bytes": len(agents.encode()), "words": len(agents.split()), "tokens": tokens[1]},
        "encoding": "o200k_base (gpt-tokenizer 4)",
    }, indent=2))


if __name__ == "__main__":
    main()
