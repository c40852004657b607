"""Run a command in a pseudo-terminal and read back what a person would see on it.

The harness draws a live panel on a terminal (rich) and plain lines elsewhere; a bug
that only shows on a terminal (a table losing its rows when the panel closes) needs
a real terminal to be seen. The command's output is fed to a terminal emulator
(pyte) of the same size, so cursor movements and erasures apply as they would on
screen; the screen and every line scrolled off it come back as text.
"""
from __future__ import annotations

import fcntl
import os
import select
import struct
import subprocess
import termios
import time

import pyte


def run_in_terminal(argv: list[str], *, cols: int = 160, rows: int = 50,
                    timeout_s: float = 900) -> tuple[int, str]:
    """(exit code, the terminal's text: scrollback then screen, trailing blanks cut)."""
    master, slave = os.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", rows, cols, 0, 0))
    env = {**os.environ, "TERM": "xterm-256color", "COLUMNS": str(cols), "LINES": str(rows)}
    proc = subprocess.Popen(argv, stdin=slave, stdout=slave, stderr=slave, env=env,
                            start_new_session=True)
    os.close(slave)
    screen = pyte.HistoryScreen(cols, rows, history=100_000)
    stream = pyte.ByteStream(screen)
    deadline = time.monotonic() + timeout_s
    try:
        while time.monotonic() < deadline:
            ready, _, _ = select.select([master], [], [], 1.0)
            if ready:
                try:
                    data = os.read(master, 65536)
                except OSError:          # the child closed the terminal (EIO)
                    break
                if not data:
                    break
                stream.feed(data)
            elif proc.poll() is not None:
                break
        else:
            proc.kill()
            raise TimeoutError(f"{argv} did not end in {timeout_s:.0f} s")
        code = proc.wait(30)
    finally:
        os.close(master)
    lines = ["".join(line[x].data for x in range(cols)).rstrip() for line in screen.history.top]
    lines += [line.rstrip() for line in screen.display]
    while lines and not lines[-1]:
        lines.pop()
    return code, "\n".join(lines)
