#!/bin/sh
# Breaks its own worktree config (a line git cannot parse), then keeps working.
printf '[x] y = "\\q"\n' >> "$(git rev-parse --absolute-git-dir)/config.worktree"
sleep 300
