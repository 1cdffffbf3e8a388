#!/usr/bin/env python3
"""Runs a command on a pseudo-terminal and prints the screen a person would
see at the end, as rendered by a terminal emulator (pyte), so the screen
tests assert on what is visible rather than on the bytes written.

  screen.py [--cols N] [--rows N] [--send TEXT]... [--signal-after S]
            [--title-log FILE] -- COMMAND...

COMMAND runs under `bash -c` on the terminal as its stdin, stdout and stderr.
Each --send TEXT is typed after the previous output settles (Python escapes
are decoded: "\\x1b[D" is the Left key, "\\x04" Ctrl-D). --signal-after S
sends SIGINT to the command's process group S seconds after it starts, and
the time from there to the first "stopping" and to the exit is printed on
stderr as "stopping_after=S exit_after=S". Every window title the command
set is appended to --title-log, one per line. Prints the screen's lines
(trailing blanks stripped, trailing empty lines dropped) and exits with the
command's exit status.
"""
import argparse
import codecs
import os
import pty
import select
import signal
import struct
import sys
import termios
import fcntl
import time

import pyte


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--cols", type=int, default=80)
    ap.add_argument("--rows", type=int, default=40)
    ap.add_argument("--send", action="append", default=[])
    ap.add_argument("--signal-after", type=float, default=None)
    ap.add_argument("--title-log", default=None)
    ap.add_argument("--timeout", type=float, default=60)
    ap.add_argument("command", nargs=argparse.REMAINDER)
    a = ap.parse_args()
    cmd = a.command[1:] if a.command[:1] == ["--"] else a.command

    screen = pyte.Screen(a.cols, a.rows)
    stream = pyte.ByteStream(screen)
    titles = []

    pid, fd = pty.fork()
    if pid == 0:
        os.execvp("bash", ["bash", "-c", " ".join(cmd)])
    fcntl.ioctl(fd, termios.TIOCSWINSZ, struct.pack("HHHH", a.rows, a.cols, 0, 0))
    os.kill(pid, signal.SIGWINCH)

    start = time.monotonic()
    sends = [codecs.decode(s, "unicode_escape").encode("utf-8", "surrogateescape") for s in a.send]
    last_output = start
    signalled_at = None
    stopping_at = None
    seen = b""
    status = None
    while True:
        now = time.monotonic()
        if now - start > a.timeout:
            os.killpg(pid, signal.SIGKILL)
            print("screen.py: timed out", file=sys.stderr)
        if a.signal_after is not None and signalled_at is None and now - start >= a.signal_after:
            os.killpg(os.getpgid(pid), signal.SIGINT)
            signalled_at = now
        if sends and now - last_output > 0.4:
            os.write(fd, sends.pop(0))
            last_output = now
        r, _, _ = select.select([fd], [], [], 0.05)
        if r:
            try:
                data = os.read(fd, 65536)
            except OSError:
                data = b""
            if not data:
                break
            last_output = time.monotonic()
            seen += data
            if signalled_at is not None and stopping_at is None and b"stopping" in seen:
                stopping_at = last_output
            stream.feed(data)
            if screen.title and (not titles or titles[-1] != screen.title):
                titles.append(screen.title)
        done, st = os.waitpid(pid, os.WNOHANG)
        if done:
            status = st
            # Drain what is left on the terminal.
            while select.select([fd], [], [], 0.1)[0]:
                try:
                    data = os.read(fd, 65536)
                except OSError:
                    break
                if not data:
                    break
                stream.feed(data)
            break
    if status is None:
        _, status = os.waitpid(pid, 0)
    end = time.monotonic()
    if signalled_at is not None:
        s = (stopping_at - signalled_at) if stopping_at else -1
        print("stopping_after=%.2f exit_after=%.2f" % (s, end - signalled_at), file=sys.stderr)
    if a.title_log:
        with open(a.title_log, "a") as f:
            for t in titles:
                f.write(t + "\n")
    lines = [line.rstrip() for line in screen.display]
    while lines and not lines[-1]:
        lines.pop()
    print("\n".join(lines))
    sys.exit(os.waitstatus_to_exitcode(status) if hasattr(os, "waitstatus_to_exitcode") else status >> 8)


if __name__ == "__main__":
    main()
