"""Dynamic KRaft quorum changes (KIP-853, Kafka 3.9+) under load.

`controller-add` starts a new controller formatted with --no-initial-controllers:
it joins as an observer, fetches the metadata log, and is added as a voter with
`kafka-metadata-quorum add-controller` run on itself (the tool reads its node id,
directory id and listener from its own config). Healed: removed again and retired.
`controller-remove` removes a voter (a follower, or the quorum leader) with
`remove-controller --controller-id --controller-directory-id`, then shuts it down
as an operator would. Healed: started again (an observer) and added back.
Each records the voters before and after and the seconds each change took; the
workload judges the rest (nothing lost, the quorum available while a majority is up).
Needs a cluster with `dynamic_quorum: true` and isolated controllers.
"""
from __future__ import annotations

import re
import time

from clusters.api import CONTROLLER
from clusters.config import CONTROLLER_PORT, LOG_DIR, NodePlan, controller_props, node_alias, props_text
from faults.base import BaseFault, FaultContext, FaultError, sh, wait_until

QUORUM_TOOL = "org.apache.kafka.tools.MetadataQuorumCommand"


def quorum_command(kafka_java: str, bootstrap_controller: str, args: str) -> str:
    return f"{kafka_java} {QUORUM_TOOL} --bootstrap-controller {bootstrap_controller} {args}"


def voter_ids(status_output: str) -> list[int]:
    """The voters' ids from `describe --status` (3.9+: CurrentVoters: [{"id": 1001, …}, …];
    older: CurrentVoters: [1001,1002])."""
    line = next((ln for ln in status_output.splitlines() if ln.startswith("CurrentVoters:")), "")
    ids = re.findall(r'"id":\s*(\d+)', line) or re.findall(r"\d+", line)
    return sorted(int(i) for i in ids)


def directory_id_of(node) -> str:
    """The node's log directory id, from its meta.properties."""
    out = sh(node, f"grep '^directory.id=' {LOG_DIR}/meta.properties")
    return out.strip().split("=", 1)[1]


class _QuorumChange(BaseFault):
    def __init__(self, timeout_s: float = 120):
        super().__init__()
        self.timeout_s = timeout_s

    def _voters(self, ctx: FaultContext, via=None) -> list[int]:
        via = via or self._any_voter(ctx)
        out = sh(via, quorum_command(ctx.kafka_java, f"localhost:{CONTROLLER_PORT}", "describe --status"))
        return voter_ids(out)

    def _any_voter(self, ctx: FaultContext, but=None):
        for n in ctx.cluster.nodes(CONTROLLER):
            if n is not but and n.is_running():
                return n
        raise FaultError("no running controller to ask")

    def _add(self, ctx: FaultContext, node) -> float:
        """add-controller from the node itself, retried while it is still catching up as an
        observer; then wait until the voters include it. Returns seconds."""
        started = time.monotonic()
        cmd = quorum_command(ctx.kafka_java, f"localhost:{CONTROLLER_PORT}",
                             "--command-config /opt/kafka/config/server.properties add-controller")

        def added() -> bool:
            result = node.exec(["sh", "-c", cmd])
            self.detail.setdefault("add_attempts", 0)
            self.detail["add_attempts"] += 1
            if result.exit_code != 0:
                self.detail["last_add_error"] = result.output.strip()[-300:]
            return result.exit_code == 0
        wait_until(added, self.timeout_s, interval_s=2.0, what=f"{node.name} added as a voter")
        wait_until(lambda: node.node_id in self._voters(ctx, self._any_voter(ctx, but=node)),
                   self.timeout_s, what=f"{node.name} among the voters")
        return round(time.monotonic() - started, 3)

    def _remove(self, ctx: FaultContext, node) -> float:
        started = time.monotonic()
        via = self._any_voter(ctx, but=node)
        sh(via, quorum_command(ctx.kafka_java, f"localhost:{CONTROLLER_PORT}",
                               f"remove-controller --controller-id {node.node_id} "
                               f"--controller-directory-id {directory_id_of(node)}"))
        wait_until(lambda: node.node_id not in self._voters(ctx, self._any_voter(ctx, but=node)),
                   self.timeout_s, what=f"{node.name} gone from the voters")
        return round(time.monotonic() - started, 3)


class ControllerAdd(_QuorumChange):
    name = "controller-add"

    def _inject(self, ctx: FaultContext) -> None:
        cluster = ctx.cluster
        controllers = cluster.nodes(CONTROLLER)
        new_id = max(n.node_id for n in controllers) + 1
        before = self._voters(ctx)
        plan = NodePlan(node_alias(CONTROLLER, new_id), CONTROLLER, new_id,
                        props_text(controller_props(cluster.spec, new_id)))
        node = cluster.add_node(plan, format_extra="--no-initial-controllers")
        self.targets = [node]
        self.detail = {"added": node.name, "voters_before": before}
        wait_until(node.is_running, self.timeout_s, what=f"{node.name} running")
        self.detail["add_s"] = self._add(ctx, node)
        self.detail["voters_after"] = self._voters(ctx)

    def _heal(self, ctx: FaultContext) -> None:
        [node] = self.targets
        self.detail["remove_s"] = self._remove(ctx, node)
        ctx.cluster.retire_node(node)
        self.detail["voters_healed"] = self._voters(ctx)


class ControllerRemove(_QuorumChange):
    name = "controller-remove"

    def __init__(self, which: str = "follower", timeout_s: float = 120):
        super().__init__(timeout_s)
        self.which = which

    def _inject(self, ctx: FaultContext) -> None:
        leader = ctx.cluster.active_controller()
        voters = self._voters(ctx)
        pool = [n for n in ctx.cluster.nodes(CONTROLLER) if n.node_id in voters and n.is_running()]
        chosen = [n for n in pool if (n is leader) == (self.which == "leader")]
        if not chosen:
            raise FaultError(f"no {self.which} voter to remove among {[n.name for n in pool]}")
        node = chosen[0] if self.which == "leader" else ctx.rng.choice(chosen)
        self.targets = [node]
        self.detail = {"removed": node.name, "was_leader": node is leader, "voters_before": voters}
        self.detail["remove_s"] = self._remove(ctx, node)
        node.stop(timeout=60)            # decommissioned, as an operator would after removing it
        self.detail["voters_after"] = self._voters(ctx)

    def _heal(self, ctx: FaultContext) -> None:
        [node] = self.targets
        if not node.is_running():
            node.start()
        wait_until(node.is_running, self.timeout_s, what=f"{node.name} running")
        self.detail["add_s"] = self._add(ctx, node)
        self.detail["voters_healed"] = self._voters(ctx)
