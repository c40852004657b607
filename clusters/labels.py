"""Run ids and the labels every container and network carries.

`harness gc` reaps what a finished run left behind. A run is over when the
process that owns it is gone: the labels name the owner's pid and the
kernel's start time for it, so a recycled pid is not mistaken for the owner.
"""
from __future__ import annotations

import os
import secrets
import socket
import time

RUN_ID = "harness.run-id"
ROLE = "harness.role"
CLUSTER = "harness.cluster"
NODE = "harness.node"
OWNER_PID = "harness.owner-pid"
OWNER_START = "harness.owner-start"
OWNER_HOST = "harness.owner-host"
KEPT = "harness.kept"            # a cluster left running on purpose (`harness cluster up`)


def new_run_id() -> str:
    return time.strftime("%Y%m%d-%H%M%S") + "-" + secrets.token_hex(3)


def _proc_start(pid: int) -> str:
    try:
        with open(f"/proc/{pid}/stat") as fh:
            # Field 22 is the start time; the command name (field 2) may contain spaces.
            return fh.read().rsplit(")", 1)[1].split()[19]
    except (OSError, IndexError):
        return ""


def owner_labels() -> dict[str, str]:
    pid = os.getpid()
    return {OWNER_PID: str(pid), OWNER_START: _proc_start(pid), OWNER_HOST: socket.gethostname()}


def run_labels(run_id: str, **extra: str) -> dict[str, str]:
    labels = {RUN_ID: run_id, **owner_labels()}
    labels.update({f"harness.{k}": v for k, v in extra.items()})
    return labels


def owner_alive(labels: dict[str, str]) -> bool:
    """Whether the process that created a labelled resource still runs here; a kept
    cluster counts as live (its owner exited on purpose)."""
    if labels.get(KEPT) == "true":
        return True
    if labels.get(OWNER_HOST) not in (None, socket.gethostname()):
        return True   # another host's run: never ours to judge
    try:
        pid = int(labels.get(OWNER_PID, ""))
    except ValueError:
        return False
    return bool(_proc_start(pid)) and _proc_start(pid) == labels.get(OWNER_START, "")
