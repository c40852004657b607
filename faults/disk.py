"""Disk faults on a broker's log directory (a size-limited tmpfs per broker).

`DiskFull` writes one filler file into the log dir until the filesystem
answers ENOSPC, so the broker's next append fails; heal deletes the filler.
`UnwritableLogDir` removes write permission from the log dir (effective only
when Kafka does not run as root). Neither touches Kafka's own files. A broker
whose only log dir fails halts; heal starts it again. What the broker did is
written into the heal row (`broker_running_at_heal`, `log_dir_failed`).
"""
from __future__ import annotations

import os
import shlex
import shutil
import subprocess
from pathlib import Path
from typing import Any

from clusters.api import DOWN_STATES
from clusters.storage import run_mount_dir
from faults.base import (
    BaseFault,
    FaultContext,
    FaultError,
    container_status,
    nodes_in_words,
    sh,
    wait_until,
)
from faults.process import ensure_running, note_heal_starts, start_supervised
from faults.selectors import Selector

FILLER = ".harness-fill"

# Messages Kafka logs when a log dir fails (LogDirFailureChannel / ReplicaManager).
LOG_DIR_FAILURE_MARKERS = ("Stopping serving logs in dir", "log dirs in", "have failed",
                           "No space left on device")


def filler_path(log_dir: str) -> str:
    return f"{log_dir.rstrip('/')}/{FILLER}"


def fill_script(log_dir: str) -> str:
    # dd stops at ENOSPC (exit 1, expected); the df check proves the disk is full.
    f = shlex.quote(filler_path(log_dir))
    d = shlex.quote(log_dir)
    return (f"dd if=/dev/zero of={f} bs=1M 2>/dev/null; "
            f"dd if=/dev/zero of={f} bs=4k oflag=append conv=notrunc 2>/dev/null; "
            f"df -P -B1 {d} | awk 'NR==2 {{print $4}}'")


def free_script(log_dir: str) -> str:
    return f"rm -f {shlex.quote(filler_path(log_dir))}"


def available_bytes(node, log_dir: str) -> int:
    out = sh(node, f"df -P -B1 {shlex.quote(log_dir)} | awk 'NR==2 {{print $4}}'")
    return int(out.strip().splitlines()[-1])


def _failure_marker_count(node) -> int:
    try:
        logs = node.logs()
    except Exception:  # noqa: BLE001
        return 0
    return sum(logs.count(m) for m in LOG_DIR_FAILURE_MARKERS)


def _await_halt(node, timeout_s: float = 15) -> None:
    """A broker whose only log dir failed halts within seconds: wait for that, so the
    heal starts it again rather than returning just before it goes down."""
    try:
        wait_until(lambda: container_status(node) in DOWN_STATES, timeout_s,
                   what=f"{node.name} to halt")
    except TimeoutError:
        pass                # it keeps running: it has another log dir


class DiskFull(BaseFault):
    name = "disk-full"

    def __init__(self, selector: Selector, log_dir: str | None = None):
        super().__init__()
        self.selector, self.log_dir = selector, log_dir
        self._markers_before: dict[str, int] = {}

    def _inject(self, ctx: FaultContext) -> None:
        log_dir = self.log_dir or ctx.log_dir
        self.targets = list(self.selector(ctx))
        self.detail = {"log_dir": log_dir, "node_ids": [n.node_id for n in self.targets]}
        for node in self.targets:
            self._markers_before[node.name] = _failure_marker_count(node)
            left = sh(node, fill_script(log_dir), check=False).strip().splitlines()
            if left and left[-1].isdigit():
                avail = int(left[-1])
            elif container_status(node) in DOWN_STATES:
                # The broker died while its disk filled (the fault's effect: it halts, or
                # its JVM dies on a page of a mapped index it cannot get), and the exec
                # went with it: the free space is asked of the host side, when there is one.
                self.detail.setdefault("down_at_fill", []).append(node.name)
                mount = host_mount_of(ctx, node)
                avail = 0 if mount is None else shutil.disk_usage(mount).free
            else:
                avail = available_bytes(node, log_dir)
            if avail > 64 * 1024:
                raise FaultError(f"{node.name}: {log_dir} still has {avail} bytes free after "
                                 f"filling; is it a size-limited tmpfs?")

    def _heal(self, ctx: FaultContext) -> None:
        log_dir = self.log_dir or ctx.log_dir
        to_start = []
        for node in self.targets:
            running = node.is_running()
            self.heal_notes.setdefault("broker_running_at_heal", {})[node.name] = running
            failed = _failure_marker_count(node) > self._markers_before.get(node.name, 0)
            self.heal_notes.setdefault("log_dir_failed", {})[node.name] = failed
            mount = host_mount_of(ctx, node)
            if mount is not None:
                free_on_host(mount)
                if running and failed:
                    _await_halt(node)
                to_start.append(node)
            elif running:
                sh(node, free_script(log_dir))
            else:
                # The filler sits on the container's tmpfs; start it, then free the space.
                node.start()
                sh(node, free_script(log_dir))
        note_heal_starts(self, ensure_running(to_start, ctx))


def free_on_host(mount: str) -> bool:
    """Delete the filler from the host-side tmpfs behind a log dir; True when there was
    one. This works whether the broker runs, has halted or is halting (an exec into a
    container that stops meanwhile is killed, exit 137)."""
    try:
        Path(mount, FILLER).unlink()
    except FileNotFoundError:
        return False
    return True


def host_mount_of(ctx: FaultContext, node) -> str | None:
    """The host-side tmpfs behind a node's log dir, when the cluster mounts one
    (clusters/storage.py), else None."""
    try:
        path = run_mount_dir(ctx.cluster.run_id) / node.name
    except Exception:  # noqa: BLE001 - a cluster without host mounts
        return None
    return str(path) if os.path.ismount(path) else None


def mount_is_readonly(path: str) -> bool:
    with open("/proc/self/mounts") as f:
        for line in f:
            fields = line.split()
            if len(fields) > 3 and fields[1] == path:
                return "ro" in fields[3].split(",")
    return False


def remount(path: str, mode: str) -> None:
    r = subprocess.run(["mount", "-o", f"remount,{mode}", path], capture_output=True, text=True)
    if r.returncode != 0:
        raise FaultError(f"mount -o remount,{mode} {path} failed: {r.stderr.strip()}")


class UnwritableLogDir(BaseFault):
    """Make a broker's log dir refuse writes. With a host-mounted tmpfs the
    harness stops the broker, remounts the tmpfs read-only (EROFS, even for a
    broker running as root) and starts it again: the broker finds its only log
    dir unwritable. Otherwise it removes write permission from the running
    broker's dirs, which works only for a non-root broker."""

    name = "log-dir-unwritable"

    def __init__(self, selector: Selector, log_dir: str | None = None,
                 stop_timeout_s: float = 30):
        super().__init__()
        self.selector, self.log_dir, self.stop_timeout_s = selector, log_dir, stop_timeout_s
        self.modes: dict[str, str] = {}
        self.remounted: dict[str, str] = {}

    def _inject(self, ctx: FaultContext) -> None:
        log_dir = self.log_dir or ctx.log_dir
        self.targets = list(self.selector(ctx))
        self.detail = {"log_dir": log_dir, "node_ids": [n.node_id for n in self.targets]}
        q = shlex.quote(log_dir)
        for node in self.targets:
            mount = host_mount_of(ctx, node)
            if mount is not None:
                # Linux refuses a read-only remount while files are open for
                # writing (EBUSY), and a broker always has its segments open:
                # stop it, remount, start it on a read-only log dir.
                self.remounted[node.name] = mount       # before the call: heal undoes it anyway
                self.detail["method"] = "remount-ro-and-restart"
                node.stop(timeout=self.stop_timeout_s)
                remount(mount, "ro")
                node.start()
                continue
            self.detail["method"] = "chmod"
            user = sh(node, "ps -o user= -C java | head -1").strip()
            if user in ("", "root"):
                raise FaultError(f"{node.name}: Kafka runs as {user or 'unknown'}; removing write "
                                 f"permission cannot stop root from writing to {log_dir}")
            self.modes[node.name] = sh(node, f"stat -c %a {q}").strip()
            # The dir and every partition dir under it: new segments and checkpoints fail.
            sh(node, f"chmod a-w {q} && find {q} -mindepth 1 -maxdepth 1 -type d "
                     f"-exec chmod a-w {{}} +")

    def _heal(self, ctx: FaultContext) -> None:
        log_dir = self.log_dir or ctx.log_dir
        q = shlex.quote(log_dir)
        to_start = []
        for node in self.targets:
            running = node.is_running()
            self.heal_notes.setdefault("broker_running_at_heal", {})[node.name] = running
            if node.name in self.remounted:
                if mount_is_readonly(self.remounted[node.name]):
                    remount(self.remounted[node.name], "rw")
                # A broker that came up on the read-only dir is failing or about
                # to: restart it on the writable one.
                if running:
                    node.stop(timeout=self.stop_timeout_s)
                to_start.append(node)
                continue
            if node.name not in self.modes:
                continue                                  # never changed
            if not running:
                node.start()
            sh(node, f"find {q} -mindepth 1 -maxdepth 1 -type d -exec chmod u+w {{}} + ; "
                     f"chmod {self.modes[node.name]} {q}")
        note_heal_starts(self, start_supervised(to_start, ctx.cluster, ctx.settle_timeout_s))


def disk_full_words(name: str, names: list[str], detail: dict[str, Any]) -> str:
    return f"{nodes_in_words(names)}'s log dir filled to the last byte"


def unwritable_words(name: str, names: list[str], detail: dict[str, Any]) -> str:
    return f"{nodes_in_words(names)}'s log dir made unwritable"
