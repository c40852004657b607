"""Spark driver JVMs whose harness process is gone.

PySpark starts the driver JVM ignoring SIGINT, and the JVM's own "exit when
Python's pipe closes" can hang in Spark's shutdown hooks; after a kill -9 of
`harness run` or `harness verify` mid-verification the JVM then lives on,
re-parented to init. `harness gc` ends them: a JVM is ours when its command line
names the app `harness-verify`, and orphaned when its parent is pid 1.
"""
from __future__ import annotations

import os
import signal
from pathlib import Path

APP = "spark.app.name=harness-verify"


def proc_stat(pid_dir: Path) -> tuple[str, int] | None:
    """(command name, parent pid) of /proc/<pid>, or None when it is gone."""
    try:
        pid_text, rest = (pid_dir / "stat").read_text().split(" (", 1)
        comm, fields = rest.rsplit(") ", 1)
        return comm, int(fields.split()[1])
    except (OSError, ValueError):
        return None


def orphan_spark_drivers() -> list[int]:
    found = []
    for pid_dir in Path("/proc").glob("[0-9]*"):
        stat = proc_stat(pid_dir)
        if stat is None or stat[0] != "java" or stat[1] != 1:
            continue
        try:
            cmdline = (pid_dir / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        if APP in cmdline:
            found.append(int(pid_dir.name))
    return found


def reap_orphan_spark_drivers(dry_run: bool = False) -> int:
    pids = orphan_spark_drivers()
    if not dry_run:
        for pid in pids:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
    return len(pids)


def child_jvms(parent: int) -> list[int]:
    return [int(d.name) for d in Path("/proc").glob("[0-9]*")
            if proc_stat(d) == ("java", parent)]
