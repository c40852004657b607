"""Size-limited log directories: a tmpfs mounted on the host per node.

A host tmpfs (rather than Docker's --tmpfs) keeps a node's data across
kill/stop/start and across re-creating its container for an upgrade, while
still filling up with ENOSPC at its size, which the disk-full fault needs.
Mounts live under MOUNT_ROOT/<run_id>/<node>; `harness gc` unmounts the
ones whose run is over.
"""
from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

from clusters.labels import owner_labels
from core.errors import HarnessError

MOUNT_ROOT = Path(os.environ.get("HARNESS_MOUNT_ROOT", "/var/lib/kafka-harness/mounts"))


def run_mount_dir(run_id: str) -> Path:
    return MOUNT_ROOT / run_id


def write_owner(run_id: str, labels: dict[str, str]) -> None:
    """Say who owns a run's mounts before the first is made (a kept cluster's labels)."""
    run_dir = run_mount_dir(run_id)
    run_dir.mkdir(parents=True, exist_ok=True)
    (run_dir / "owner.json").write_text(json.dumps(labels))


def mount_tmpfs(run_id: str, node: str, size_mb: int) -> Path:
    run_dir = run_mount_dir(run_id)
    run_dir.mkdir(parents=True, exist_ok=True)
    owner = run_dir / "owner.json"
    if not owner.exists():
        owner.write_text(json.dumps(owner_labels()))
    path = run_dir / node
    path.mkdir(exist_ok=True)
    if not os.path.ismount(path):
        r = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size_mb}m,mode=0755",
                            "tmpfs", str(path)], capture_output=True, text=True)
        if r.returncode != 0:
            raise HarnessError(f"cannot mount a {size_mb} MiB tmpfs for {node}'s log dir at "
                               f"{path}: {r.stderr.strip()} (fix: run as root)")
    return path


def unmount_run(run_id: str) -> int:
    """Unmount and remove every node mount of a run; returns how many were unmounted."""
    run_dir = run_mount_dir(run_id)
    if not run_dir.exists():
        return 0
    count = 0
    for p in run_dir.iterdir():
        if p.is_dir() and os.path.ismount(p):
            # Lazy unmount: a container that is still being torn down may hold it.
            subprocess.run(["umount", "-l", str(p)], capture_output=True)
            count += 1
    shutil.rmtree(run_dir, ignore_errors=True)
    return count


def run_owner(run_id: str) -> dict[str, str]:
    try:
        return json.loads((run_mount_dir(run_id) / "owner.json").read_text())
    except (OSError, ValueError):
        return {}


def mounted_runs() -> list[str]:
    if not MOUNT_ROOT.exists():
        return []
    return sorted(p.name for p in MOUNT_ROOT.iterdir() if p.is_dir())
