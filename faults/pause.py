"""GC-pause-like freezes: `docker pause` (cgroup freezer) or SIGSTOP/SIGCONT
of the JVM. A frozen node keeps its sockets open, so peers see silence, not a
closed connection: long enough and it exceeds `replica.lag.time.max.ms`, the
broker session timeout, or `zookeeper.session.timeout.ms`.
"""
from __future__ import annotations

from typing import Any

from faults.base import BaseFault, FaultContext, FaultError, container_status, nodes_in_words, sh
from faults.selectors import Selector

DOCKER = "docker"
SIGSTOP = "sigstop"

# Every JVM in the container (Kafka or ZooKeeper); pkill never matches itself.
STOP_SCRIPT = "pkill -STOP -x java"
CONT_SCRIPT = "pkill -CONT -x java; true"


def unfreeze(node) -> None:
    """Undo either kind of freeze; safe on a node that is not frozen."""
    try:
        node.unpause()
    except Exception:  # noqa: BLE001 - not paused (docker answers 409) or not running
        pass
    if node.is_running():
        sh(node, CONT_SCRIPT, check=False)


class Pause(BaseFault):
    name = "pause"

    def __init__(self, selector: Selector, method: str = DOCKER, *, hold_s: float | None = None):
        super().__init__()
        if method not in (DOCKER, SIGSTOP):
            raise FaultError(f"method must be {DOCKER!r} or {SIGSTOP!r}, got {method!r}")
        self.selector, self.method, self.hold_s = selector, method, hold_s
        self.heal_after_s = hold_s

    def _inject(self, ctx: FaultContext) -> None:
        self.targets = list(self.selector(ctx))
        self.detail = {"method": self.method, "selector": getattr(self.selector, "__name__", "?"),
                       "node_ids": [n.node_id for n in self.targets]}
        if self.hold_s is not None:
            self.detail["hold_s"] = self.hold_s
        for node in self.targets:
            status = container_status(node)
            if status not in (None, "running"):     # Docker's own words name a container hash
                raise FaultError(f"{node.name} is not running (its container is {status}): "
                                 "there is nothing to pause")
            if self.method == DOCKER:
                node.pause()
            else:
                sh(node, STOP_SCRIPT)

    def _heal(self, ctx: FaultContext) -> None:
        for node in self.targets:
            unfreeze(node)


def paused_words(name: str, names: list[str], detail: dict[str, Any]) -> str:
    return f"{nodes_in_words(names)} paused ({detail.get('method', 'SIGSTOP')}): alive but silent"
