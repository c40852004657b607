"""Rolling operations: a restart or an upgrade, one node at a time, waiting
for the cluster to be whole (every partition led, full ISR) before the next.

`RollingUpgrade` re-creates each node's container on the next version's
image keeping its data (the cluster must be `Replaceable`): for KRaft the
controllers first, then the brokers, then the metadata version is raised
with kafka-features.sh; the workload keeps running through it.
An upgrade cannot be undone: its heal only makes sure every node runs.
"""
from __future__ import annotations

import shlex
import time

from clusters.api import BROKER_ROLES, COMBINED, CONTROLLER, ZOOKEEPER, Node, Replaceable
from faults.base import BaseFault, FaultContext, FaultError, sh, wait_full_isr, wait_until
from faults.process import (
    CLEAN,
    HARD,
    ensure_running,
    note_heal_starts,
    start_notes,
    start_supervised,
    stop_node,
)
from faults.selectors import Selector, all_brokers


def settle(ctx: FaultContext, node: Node, timeout_s: float) -> float:
    """Wait until the node runs and the cluster is whole again; return seconds."""
    start = time.monotonic()
    wait_until(node.is_running, timeout_s, what=f"{node.name} running")
    remaining = max(1.0, timeout_s - (time.monotonic() - start))
    wait_full_isr(ctx.cluster, remaining)
    return round(time.monotonic() - start, 3)


class RollingRestart(BaseFault):
    def __init__(self, signal: str = CLEAN, selector: Selector = all_brokers, *,
                 isr_timeout_s: float = 120, down_s: float = 0.0, stop_timeout_s: float = 60):
        super().__init__()
        self.name = "rolling-restart-hard" if signal == HARD else "rolling-restart"
        self.signal, self.selector = signal, selector
        self.isr_timeout_s, self.down_s, self.stop_timeout_s = isr_timeout_s, down_s, stop_timeout_s

    def _inject(self, ctx: FaultContext) -> None:
        self.targets = list(self.selector(ctx))
        self.detail = {"signal": self.signal, "order": [n.name for n in self.targets],
                       "settle_s": {}}
        wait_full_isr(ctx.cluster, self.isr_timeout_s)
        starts = []
        for node in self.targets:
            stop_node(node, self.signal, self.stop_timeout_s)
            time.sleep(self.down_s)
            starts += start_supervised([node], ctx.cluster, self.isr_timeout_s)
            self.detail.update(start_notes(starts))
            self.detail["settle_s"][node.name] = settle(ctx, node, self.isr_timeout_s)

    def _heal(self, ctx: FaultContext) -> None:
        note_heal_starts(self, ensure_running(self.targets, ctx))


def upgrade_order(nodes: list[Node]) -> list[Node]:
    """KRaft controllers (and combined nodes, which host the quorum) first, then
    broker-only nodes; ZooKeeper nodes are not Kafka and are left alone."""
    controllers = [n for n in nodes if n.role in (CONTROLLER, COMBINED)]
    brokers = [n for n in nodes if n.role not in (CONTROLLER, COMBINED, ZOOKEEPER)
               and n.role in BROKER_ROLES]
    return controllers + brokers


def features_upgrade_script(kafka_java: str, bootstrap: str, release_version: str) -> str:
    """Raise the cluster's feature levels (metadata.version …) to a release's."""
    return (f"{kafka_java} org.apache.kafka.tools.FeatureCommand "
            f"--bootstrap-server {shlex.quote(bootstrap)} upgrade "
            f"--release-version {shlex.quote(release_version)}")


def _release_line(version: str) -> str:
    """'4' or '4.3.1' -> '4.3' (the alias is resolved through the cluster's version table)."""
    try:
        from clusters.versions import resolve_version
        return resolve_version(version).line
    except Exception:  # noqa: BLE001 - an exact version not in the table
        return ".".join(version.split(".")[:2])


class RollingUpgrade(BaseFault):
    name = "rolling-upgrade"

    def __init__(self, to_version: str, *, release_version: str | None = None,
                 isr_timeout_s: float = 180):
        super().__init__()
        self.to_version = to_version
        # The metadata version to raise to once every node runs the new
        # version: by default the new version's major.minor (e.g. "4.1").
        self.release_version = release_version or _release_line(to_version)
        self.isr_timeout_s = isr_timeout_s

    def _inject(self, ctx: FaultContext) -> None:
        cluster = ctx.cluster
        if not isinstance(cluster, Replaceable):
            raise FaultError(f"{type(cluster).__name__} cannot replace nodes; "
                             "a rolling upgrade needs a Replaceable cluster")
        if cluster.nodes(ZOOKEEPER) and int(self.to_version.split(".")[0]) >= 4:
            raise FaultError("a ZooKeeper-mode cluster cannot be upgraded to Kafka 4 "
                             "(it has no ZooKeeper mode); migrate to KRaft first")
        order = upgrade_order(cluster.nodes())
        self.targets = order
        self.detail = {"to_version": self.to_version, "release_version": self.release_version,
                       "order": [n.name for n in order], "settle_s": {}}
        wait_full_isr(cluster, self.isr_timeout_s)
        for old in order:
            new = cluster.replace_node(old, self.to_version)
            self.detail["settle_s"][new.name] = settle(ctx, new, self.isr_timeout_s)
        broker = next(n for n in cluster.nodes(BROKER_ROLES) if n.is_running())
        out = sh(broker, features_upgrade_script(ctx.kafka_java, ctx.internal_bootstrap,
                                                 self.release_version))
        self.detail["features_output"] = out.strip()[-300:]
        self.targets = cluster.nodes()

    def _heal(self, ctx: FaultContext) -> None:
        note_heal_starts(self, ensure_running(ctx.cluster.nodes(), ctx))
