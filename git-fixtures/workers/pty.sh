#!/bin/sh
# A worker that uses pseudo-terminals, as hook managers and test runners do: it runs a
# program on a pty of its own with python's `pty` module and with `script`, then, with a
# pty of its own still open, pushes keystrokes (TIOCSTI, `crewpwned`) into each of the
# lead's terminals ($LEAD_TTYS, as the lead names them): by their paths, through
# /proc/<pid>/root of its parent and of init, and through /dev/tty. Each push is reported
# as `<attempt>: refused|DROVE`, or `<attempt>: own pty` when the path names one of the
# worker's own ptys in its view.
set -u
PARENT=$PPID python3 - <<'PY'
import fcntl, os, pty, subprocess, termios

pid, fd = pty.fork()
if pid == 0:
    os.execvp("sh", ["sh", "-c", 'echo "own pty: $(tty)"; test -t 0 && test -t 1 && echo "on a tty"'])
out = b""
while True:
    try:
        chunk = os.read(fd, 1024)
    except OSError:
        break
    if not chunk:
        break
    out += chunk
os.waitpid(pid, 0)
print(out.decode(errors="replace").replace("\r", "").strip())
done = subprocess.run(["script", "-qc", "echo via script: $(tty)", "/dev/null"],
                      capture_output=True, text=True)
print(done.stdout.replace("\r", "").strip() or "script failed: " + done.stderr.strip())

master, slave = os.openpty()
own = os.fstat(slave).st_dev
targets = []
for tty in os.environ.get("LEAD_TTYS", "").split():
    targets += [tty, "/proc/%s/root%s" % (os.environ["PARENT"], tty), "/proc/1/root" + tty]
targets.append("/dev/tty")
for path in targets:
    name = "tiocsti " + path
    try:
        tty = os.open(path, os.O_RDONLY | os.O_NOCTTY)
    except OSError:
        print(name + ": refused")
        continue
    try:
        for c in b"crewpwned":
            fcntl.ioctl(tty, termios.TIOCSTI, bytes([c]))
        print(name + (": own pty" if os.fstat(tty).st_dev == own else ": DROVE"))
    except OSError:
        print(name + ": refused")
    os.close(tty)
PY
printf '## Result\nTried.\n## How to verify\ntrue\n## Deferred / concerns\nNone.\n'
