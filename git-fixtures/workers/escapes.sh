#!/bin/sh
# Prints terminal escape sequences (clear the screen, a window title, colours, a bell) in
# its last line, then works on: a console shows the words and obeys none of them.
echo "starting"
printf '\033[2J\033[H\033]0;pwned\007\033[31mred alert\033[0m\007 done\n'
sleep 300
