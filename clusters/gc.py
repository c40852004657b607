"""`harness gc`: reap containers, networks and log-dir mounts of runs that are over.

A run is over when the process that owns it is gone (see clusters.labels).
Paused containers are unpaused first so they can be removed cleanly.
"""
from __future__ import annotations

from dataclasses import dataclass

from clusters import storage
from clusters.docker_env import docker_client
from clusters.labels import RUN_ID, owner_alive


@dataclass
class Removed:
    containers: int = 0
    networks: int = 0
    volumes: int = 0     # log-dir mounts


def collect_garbage(all_runs: bool = False, dry_run: bool = False) -> Removed:
    client = docker_client()
    removed = Removed()
    finished: set[str] = set()
    live: set[str] = set()

    def over(labels: dict[str, str]) -> bool:
        run = labels.get(RUN_ID, "")
        if all_runs or not owner_alive(labels):
            finished.add(run)
            return True
        live.add(run)
        return False

    for c in client.containers.list(all=True, filters={"label": RUN_ID}):
        if over(c.labels):
            removed.containers += 1
            if not dry_run:
                if c.status == "paused":
                    c.unpause()
                c.remove(force=True, v=True)
    for n in client.networks.list(filters={"label": RUN_ID}):
        if over(n.attrs.get("Labels") or {}):
            removed.networks += 1
            if not dry_run:
                n.remove()
    for run in storage.mounted_runs():
        if run in live:
            continue
        if all_runs or run in finished or not owner_alive(storage.run_owner(run)):
            if dry_run:
                removed.volumes += 1
            else:
                removed.volumes += storage.unmount_run(run)
    return removed
