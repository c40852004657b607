"""Rolling operations: a restart or an upgrade, one node at a time, waiting
for the cluster to be whole (every partition led, full ISR) before the next.

`RollingUpgrade` carries out the steps clusters/upgrade_paths.py plans from
Kafka's upgrade notes for the pair: each node's container re-created on the
next version's image keeping its data (the cluster must be `Replaceable`),
KRaft controllers first, then brokers, then the metadata version raised with
kafka-features.sh; in ZooKeeper mode the inter.broker.protocol.version steps;
with `rollback`, the binaries rolled back before the metadata is touched. The
workload keeps running through it. Its heal only makes sure every node runs.
"""
from __future__ import annotations

import re
import shlex
import time
from typing import Any

from clusters.api import BROKER_ROLES, COMBINED, CONTROLLER, ZOOKEEPER, Node, Replaceable
from clusters.config import plan_nodes
from clusters.upgrade_paths import (
    FEATURES,
    PIN_PROTOCOL,
    REPLACE,
    RESTART,
    UpgradePlan,
    features_args,
    plan_upgrade,
)
from clusters.versions import resolve_version
from core.errors import SpecError
from faults.base import (
    BaseFault,
    FaultContext,
    FaultError,
    nodes_in_words,
    sh,
    wait_full_isr,
    wait_until,
)
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


def features_upgrade_script(kafka_java: str, bootstrap: str, release_version: str,
                            flag: str = "--release-version") -> str:
    """Raise the cluster's feature levels (metadata.version …) to a release's."""
    return (f"{kafka_java} org.apache.kafka.tools.FeatureCommand "
            f"--bootstrap-server {shlex.quote(bootstrap)} upgrade "
            f"{flag} {shlex.quote(release_version)}")


def features_describe_script(kafka_java: str, bootstrap: str) -> str:
    return (f"{kafka_java} org.apache.kafka.tools.FeatureCommand "
            f"--bootstrap-server {shlex.quote(bootstrap)} describe")


def _release_line(version: str) -> str:
    """'4' or '4.3.1' -> '4.3' (the alias is resolved through the cluster's version table)."""
    try:
        return resolve_version(version).line
    except Exception:  # noqa: BLE001 - an exact version not in the table
        return ".".join(version.split(".")[:2])


class RollingUpgrade(BaseFault):
    """The steps clusters/upgrade_paths.py plans for this cluster's mode and versions
    (Kafka's upgrade notes for the pair), each timed in detail["steps"]."""
    name = "rolling-upgrade"

    def __init__(self, to_version: str, *, release_version: str | None = None,
                 isr_timeout_s: float = 180, rollback: bool = False):
        super().__init__()
        self.to_version = to_version
        # The metadata version to raise to once every node runs the new
        # version: by default the new version's major.minor (e.g. "4.1").
        self.release_version = release_version or _release_line(to_version)
        self.isr_timeout_s = isr_timeout_s
        self.rollback = rollback

    def plan(self, cluster) -> UpgradePlan:
        try:
            return plan_upgrade(cluster.spec.kafka, resolve_version(self.to_version),
                                cluster.spec.mode, [(n.name, n.role) for n in cluster.nodes()],
                                rollback=self.rollback, release_version=self.release_version)
        except SpecError as e:
            raise FaultError(f"{e.problem} ({e.fix})") from None

    def _inject(self, ctx: FaultContext) -> None:
        cluster = ctx.cluster
        if not isinstance(cluster, Replaceable):
            raise FaultError(f"{type(cluster).__name__} cannot replace nodes; "
                             "a rolling upgrade needs a Replaceable cluster")
        plan = self.plan(cluster)
        self.targets = [cluster.node(s.node) for s in plan.steps if s.action == REPLACE
                        and s.value == plan.new.version]
        self.detail = {"from_version": plan.old.version, "to_version": plan.new.version,
                       "release_version": self.release_version, "path": plan.kind, "doc": plan.doc,
                       "rollback": plan.rollback, "plan": plan.lines(),
                       "order": [n.name for n in self.targets], "settle_s": {}, "steps": []}
        wait_full_isr(cluster, self.isr_timeout_s)
        for step in plan.steps:
            started = time.monotonic()
            self._run_step(ctx, plan, step)
            self.detail["steps"].append({**step.to_dict(),
                                         "seconds": round(time.monotonic() - started, 3)})
        self.targets = cluster.nodes()

    def _run_step(self, ctx: FaultContext, plan: UpgradePlan, step) -> None:
        cluster = ctx.cluster
        if step.action == REPLACE:
            new = cluster.replace_node(cluster.node(step.node), step.value)
            key = new.name if step.value == plan.new.version else f"{new.name} (rollback)"
            self.detail["settle_s"][key] = settle(ctx, new, self.isr_timeout_s)
        elif step.action == RESTART:
            node = cluster.node(step.node)
            plan_of = next(p for p in plan_nodes(cluster.spec) if p.alias == node.name)
            new = cluster.reconfigure_node(node, plan_of)
            self.detail["settle_s"][f"{new.name} (protocol {step.value})"] = \
                settle(ctx, new, self.isr_timeout_s)
        elif step.action == PIN_PROTOCOL:
            # taken up by every broker re-created from now on
            cluster.adopt_spec(cluster.spec.with_config({"inter.broker.protocol.version": step.value}))
        elif step.action == FEATURES:
            broker = next(n for n in cluster.nodes(BROKER_ROLES) if n.is_running())
            flag = features_args(step, plan.new)[1]
            out = sh(broker, features_upgrade_script(ctx.kafka_java, ctx.internal_bootstrap,
                                                     step.value, flag))
            self.detail["features_output"] = out.strip()[-300:]
            described = sh(broker, features_describe_script(ctx.kafka_java, ctx.internal_bootstrap),
                           check=False)
            self.detail["features_after"] = _finalized_levels(described)

    def _heal(self, ctx: FaultContext) -> None:
        note_heal_starts(self, ensure_running(ctx.cluster.nodes(), ctx))


def _finalized_levels(describe_output: str) -> dict[str, str]:
    """'Feature: metadata.version  SupportedMinVersion: … FinalizedVersionLevel: 4.1-IV1 …'
    lines -> {feature: finalized level} (tabs or spaces between the fields)."""
    found = re.findall(r"Feature:\s*(\S+).*?FinalizedVersionLevel:\s*(\S+)", describe_output)
    return {name: level for name, level in found}


def restart_words(name: str, names: list[str], detail: dict[str, Any]) -> str:
    return f"{nodes_in_words(names)} restarted one at a time, each waited for until its ISR was full"


def upgrade_words(name: str, names: list[str], detail: dict[str, Any]) -> str:
    return f"{nodes_in_words(names)} upgraded one at a time to Kafka {detail.get('to_version')}"
