"""ZooKeeper session expiry: keep a broker (or a ZooKeeper node) silent for
longer than `zookeeper.session.timeout.ms`, by freezing it or by cutting it
off from the ensemble. Inject holds the fault until the session has surely
expired (timeout + margin); heal lets the broker reconnect and re-register.
"""
from __future__ import annotations

import time
from typing import Any

from clusters.api import ZOOKEEPER
from faults.base import BaseFault, FaultContext, FaultError, nodes_in_words
from faults.network import Partition, Shape, isolate_grudge
from faults.pause import DOCKER, Pause
from faults.selectors import Selector, random_broker, zookeepers

METHODS = ("pause", "partition")
DEFAULT_SESSION_TIMEOUT_MS = 18000      # Kafka's default zookeeper.session.timeout.ms


def _cut_from_zookeeper(selector: Selector) -> Shape:
    """The targets lose the ZooKeeper ensemble (brokers still see each other);
    a ZooKeeper target loses everyone."""
    def build(ctx: FaultContext):
        targets = selector(ctx)
        if any(t.role == ZOOKEEPER for t in targets):
            others = [n for n in ctx.cluster.nodes() if n.role != "toxiproxy"]
            return isolate_grudge(targets, others)
        return isolate_grudge(targets, [*targets, *zookeepers(ctx)])
    return Shape("cut-from-zookeeper", build)


class ZkSessionExpiry(BaseFault):
    name = "zk-session-expiry"

    def __init__(self, selector: Selector = random_broker, method: str = "pause", *,
                 session_timeout_ms: int = DEFAULT_SESSION_TIMEOUT_MS, margin_s: float = 3.0):
        super().__init__()
        if method not in METHODS:
            raise FaultError(f"method must be one of {METHODS}, got {method!r}")
        self.selector, self.method = selector, method
        self.session_timeout_ms, self.margin_s = session_timeout_ms, margin_s
        self.inner: BaseFault | None = None

    def _inject(self, ctx: FaultContext) -> None:
        if not ctx.cluster.nodes(ZOOKEEPER):
            raise FaultError("ZooKeeper session expiry needs a ZooKeeper-mode cluster")
        hold_s = self.session_timeout_ms / 1000 + self.margin_s
        self.inner = (Pause(self.selector, DOCKER) if self.method == "pause"
                      else Partition(_cut_from_zookeeper(self.selector)))
        self.inner._inject(ctx)
        self.targets = list(self.inner.targets)
        self.detail = {"method": self.method, "session_timeout_ms": self.session_timeout_ms,
                       "hold_s": hold_s, **self.inner.detail}
        time.sleep(hold_s)

    def _heal(self, ctx: FaultContext) -> None:
        if self.inner is not None:
            self.inner._heal(ctx)


def expiry_words(name: str, names: list[str], detail: dict[str, Any]) -> str:
    return f"{nodes_in_words(names)}'s ZooKeeper session expired"
