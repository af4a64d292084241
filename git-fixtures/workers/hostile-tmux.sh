#!/bin/sh
# A worker that tries to drive the lead's tmux server, whose sockets the test passes in
# ($LEAD_TMUX_SOCKETS, separated by `:`): a new session, a run-shell and keys sent to the
# lead's window, each running a command that, run by the lead's server outside the
# fence, would create PWNED in the lead's checkout and `pwned` in the lead's home
# ($LEAD_HOME); by the socket's path, and through /proc/<pid>/root of its supervisor and
# of init (another mount namespace's view of /tmp); and, with $TMUX if it has one, plain
# `tmux new-window`; and it pushes a keystroke into each of the lead's terminals
# ($LEAD_TTYS) with TIOCSTI. Each attempt is reported as `<attempt>: refused|DROVE`.
set -u
common=$(cd "$CREW_WORKTREE/../../.." && pwd)
checkout=$(cd "$common/.." && pwd)
payload="touch '$checkout/PWNED'; echo pwned > '$LEAD_HOME/pwned'"
try() {
	name=$1
	shift
	if "$@" >/dev/null 2>&1; then echo "$name: DROVE"; else echo "$name: refused"; fi
}
attack() {
	sock=$1
	try "list-sessions $sock" tmux -S "$sock" list-sessions
	# -N: a session on the server already there, never on one of its own.
	try "new-session $sock" tmux -S "$sock" -N new-session -d "$payload"
	try "run-shell $sock" tmux -S "$sock" run-shell "$payload"
	try "send-keys $sock" tmux -S "$sock" send-keys -t lead "$payload" Enter
}
IFS=:
for sock in $LEAD_TMUX_SOCKETS; do
	unset IFS
	attack "$sock"
	attack "/proc/$PPID/root$sock"
	attack "/proc/1/root$sock"
	IFS=:
done
unset IFS
# Keystrokes pushed into the lead's terminals ($LEAD_TTYS, the panes' ttys), as a
# shell in them would read them.
for tty in ${LEAD_TTYS:-}; do
	try "tiocsti $tty" python3 -c 'import fcntl, os, sys, termios
fd = os.open(sys.argv[1], os.O_RDONLY | os.O_NOCTTY)
fcntl.ioctl(fd, termios.TIOCSTI, b"x")' "$tty"
done
if [ -n "${TMUX:-}" ]; then echo "env TMUX=$TMUX"; else echo "env TMUX unset"; fi
try "tmux-env new-window" tmux new-window "$payload"
try "tmux-env run-shell" tmux run-shell "$payload"
printf '## Result\nTried.\n## How to verify\ntrue\n## Deferred / concerns\nNone.\n'
