"""ZooKeeper → KRaft migration under load, step by step as Kafka's 3.9 operations
guide ("ZooKeeper to KRaft Migration") does it, on a `Migratable` cluster:

1. provision-controllers: read the cluster id (a broker's meta.properties), start
   the KRaft controllers in migration mode formatted with it, wait for an active one;
2. brokers-enter-migration: roll each broker with the migration flag and the
   controller quorum (full ISR between); the last restart starts the migration;
3. metadata-migration: wait for the controller's "Completed migration of metadata
   from ZooKeeper to KRaft" and its DUAL_WRITE state;
4. brokers-to-kraft: roll each broker again as process.roles=broker, no ZooKeeper;
5. controllers-finalize: roll each controller out of migration mode, wait for the
   migration state POST_MIGRATION;
6. retire-zookeeper: stop ZooKeeper; the cluster describes itself as KRaft;
7. verify-kraft: `kafka-metadata-quorum describe --status` answers through a broker.

Each step writes a `phase` event `zk-migration:<step>` (ts_us: its start; end_us,
seconds and outcome in the detail, like the run's own phases) and its timings go
into the fault's detail (`steps`). The workload runs throughout. A migration cannot
be undone: heal only makes sure every node runs.
"""
from __future__ import annotations

import re
import shlex
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import datetime
from typing import Any

from clusters.api import BROKER, CONTROLLER, ZOOKEEPER, Migratable, Node
from clusters.migration import MIGRATION_DONE_LOG, MigrationPlan
from core.errors import SpecError
from core.history import now_us
from faults.base import BaseFault, FaultContext, FaultError, sh, wait_full_isr, wait_until
from faults.process import ensure_running, note_heal_starts
from faults.rolling import settle

PROVISION, ENTER, MIGRATE = "provision-controllers", "brokers-enter-migration", "metadata-migration"
TO_KRAFT, FINALIZE = "brokers-to-kraft", "controllers-finalize"
RETIRE, VERIFY = "retire-zookeeper", "verify-kraft"
STEPS = (PROVISION, ENTER, MIGRATE, TO_KRAFT, FINALIZE, RETIRE, VERIFY)
ACTIVE_LOG = "becoming the active controller at epoch"
# Logged by each controller replaying the record that ends the migration (3.9.2: "Replayed
# a ZkMigrationStateRecord changing the migration state from MIGRATION to POST_MIGRATION").
FINALIZED_LOGS = ("to post_migration", "loaded zk migration state of post_migration")
# The migration driver's states: it leaves WAIT_FOR_BROKERS once every broker has
# registered in migration mode, and reaches DUAL_WRITE once the metadata is copied
# and the brokers are told about their new controller.
DRIVER_STARTED, DRIVER_DONE = "from wait_for_brokers to", "to dual_write state"


def _logged_at(line: str) -> datetime | None:
    """The time of a Kafka log line ('[2026-11-23 15:15:15,072] INFO …')."""
    m = re.match(r"\[(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3})\]", line)
    return datetime.strptime(m.group(1), "%Y-%m-%d %H:%M:%S,%f") if m else None


def seconds_between(log: str, first: str, last: str) -> float | None:
    """Seconds from the first line containing `first` to the first line after it
    containing `last` (lower-cased), by the log's own timestamps (one clock)."""
    start = None
    for line in log.splitlines():
        low = line.lower()
        if start is None and first in low:
            start = _logged_at(line)
        elif start is not None and last in low:
            end = _logged_at(line)
            return None if end is None else round((end - start).total_seconds(), 3)
    return None


def logged(nodes: list[Node], needles: tuple[str, ...]) -> str | None:
    """The first log line of any node containing one of `needles` (lower-cased)."""
    for n in nodes:
        for line in n.logs().splitlines():
            low = line.lower()
            if any(needle in low for needle in needles):
                return line.strip()
    return None


def quorum_status_script(kafka_java: str, bootstrap: str) -> str:
    return (f"{kafka_java} org.apache.kafka.tools.MetadataQuorumCommand "
            f"--bootstrap-server {bootstrap} describe --status")


class ZkMigration(BaseFault):
    name = "zk-migration"

    def __init__(self, controllers: int = 1, *, migration_timeout_s: float = 180,
                 isr_timeout_s: float = 180):
        super().__init__()
        self.controllers = controllers
        self.migration_timeout_s, self.isr_timeout_s = migration_timeout_s, isr_timeout_s
        self._t0 = 0.0

    @contextmanager
    def _step(self, ctx: FaultContext, name: str, target: list[Node]) -> Iterator[dict[str, Any]]:
        """Time one step; write its `phase` event and its record in detail["steps"].
        `target` is read when the step ends (a step may add the nodes it made)."""
        start_us, t = now_us(), time.monotonic()
        record: dict[str, Any] = {"step": name, "start_s": round(t - self._t0, 3)}
        self.detail["steps"].append(record)
        outcome, error = "ok", None
        try:
            yield record
        except BaseException as e:
            outcome = "interrupted" if isinstance(e, KeyboardInterrupt) else "failed"
            error = f"{type(e).__name__}: {e}"[:300]
            raise
        finally:
            record.update(seconds=round(time.monotonic() - t, 3), outcome=outcome)
            ctx.emit("phase", f"{self.name}:{name}", ",".join(n.name for n in target) or None,
                     ts_us=start_us, end_us=now_us(), error=error, fault_id=self.fault_id,
                     **record)

    def _inject(self, ctx: FaultContext) -> None:
        cluster = ctx.cluster
        if not isinstance(cluster, Migratable):
            raise FaultError(f"{type(cluster).__name__} cannot add or reconfigure nodes; "
                             "a ZooKeeper → KRaft migration needs a Migratable cluster")
        try:
            plan = cluster.migration_plan(self.controllers)
        except SpecError as e:
            raise FaultError(str(e)) from None
        self._t0 = time.monotonic()
        self.targets = cluster.nodes()
        self.detail = {"controllers": self.controllers, "steps": []}
        wait_full_isr(cluster, self.isr_timeout_s)
        cluster_id = self._provision(ctx, cluster, plan)
        self._roll(ctx, cluster, ENTER, plan.brokers_migrating)
        self._await_migration(ctx, cluster)
        self._roll(ctx, cluster, TO_KRAFT, plan.brokers_kraft)
        self._finalize(ctx, cluster, plan)
        self._retire_zookeeper(ctx, cluster, plan, cluster_id)
        self._verify(ctx, cluster)
        self.targets = cluster.nodes()
        self.detail["total_s"] = round(time.monotonic() - self._t0, 3)

    def _provision(self, ctx: FaultContext, cluster, plan: MigrationPlan) -> str:
        brokers = cluster.nodes(BROKER)
        added: list[Node] = []
        with self._step(ctx, PROVISION, added) as record:
            # The guide: the id is in any broker's meta.properties (or ZooKeeper's /cluster/id).
            meta = f"{ctx.log_dir}/meta.properties"
            cluster_id = sh(brokers[0], f"sed -n 's/^cluster.id=//p' {shlex.quote(meta)}").strip()
            if not cluster_id:
                raise FaultError(f"{brokers[0].name} has no cluster.id in {meta}")
            record["cluster_id"] = self.detail["cluster_id"] = cluster_id
            added += [cluster.add_node(p, cluster_id) for p in plan.controllers]
            record["active"] = wait_until(lambda: logged(added, (ACTIVE_LOG,)), self.isr_timeout_s,
                                          interval_s=1.0, what="an active KRaft controller")
        return cluster_id

    def _roll(self, ctx: FaultContext, cluster, step: str, plans,
              then: Callable[[dict[str, Any], list[Node]], None] | None = None) -> None:
        """Re-create each planned node with its new config, one at a time, the
        cluster whole again (every partition led, full ISR) before the next;
        `then(record, new_nodes)` ends the step."""
        old = {n.name: n for n in cluster.nodes()}
        with self._step(ctx, step, [old[p.alias] for p in plans]) as record:
            record["node_s"] = {}       # per node: from its clean stop to the cluster whole again
            new = []
            for p in plans:
                started = time.monotonic()
                node = cluster.reconfigure_node(old[p.alias], p)
                settle(ctx, node, self.isr_timeout_s)
                if node.role == CONTROLLER:
                    # Not before: until the migration, a ZooKeeper broker is controller too.
                    wait_until(cluster.active_controller, self.isr_timeout_s,
                               what="an active controller")
                record["node_s"][node.name] = round(time.monotonic() - started, 3)
                new.append(node)
            if then is not None:
                then(record, new)

    def _await_migration(self, ctx: FaultContext, cluster) -> None:
        controllers = cluster.nodes(CONTROLLER)
        with self._step(ctx, MIGRATE, controllers) as record:
            # It usually ends while the last broker settles, so the step's own time is
            # what is left of it; driver_s is the controller's account of all of it.
            def dual_writing() -> Node | None:
                return next((n for n in controllers if logged([n], (DRIVER_DONE,))), None)
            done = wait_until(dual_writing, self.migration_timeout_s, interval_s=1.0,
                              what="the controller to copy ZooKeeper's metadata (DUAL_WRITE)")
            line = logged([done], (MIGRATION_DONE_LOG,)) or ""
            record["log"] = self.detail["migration_log"] = line[:400]
            record["driver_s"] = seconds_between(done.logs(), DRIVER_STARTED, DRIVER_DONE)

    def _finalize(self, ctx: FaultContext, cluster, plan: MigrationPlan) -> None:
        def await_post_migration(record: dict[str, Any], controllers: list[Node]) -> None:
            start = time.monotonic()
            line = wait_until(lambda: logged(controllers, FINALIZED_LOGS),
                              self.migration_timeout_s, interval_s=1.0,
                              what="the migration state POST_MIGRATION")
            record["finalized_log"] = line[:400]
            record["finalized_wait_s"] = round(time.monotonic() - start, 3)
        self._roll(ctx, cluster, FINALIZE, plan.controllers_kraft, then=await_post_migration)

    def _retire_zookeeper(self, ctx: FaultContext, cluster, plan: MigrationPlan,
                          cluster_id: str) -> None:
        zookeepers = cluster.nodes(ZOOKEEPER)
        with self._step(ctx, RETIRE, zookeepers) as record:
            for zk in zookeepers:
                cluster.retire_node(zk)
            record["zookeeper_running"] = {zk.name: zk.is_running() for zk in zookeepers}
            cluster.adopt_spec(plan.kraft_spec, cluster_id)

    def _verify(self, ctx: FaultContext, cluster) -> None:
        broker = next(n for n in cluster.nodes(BROKER) if n.is_running())
        with self._step(ctx, VERIFY, [broker]) as record:
            out = sh(broker, quorum_status_script(ctx.kafka_java, ctx.internal_bootstrap))
            if "LeaderId" not in out:
                raise FaultError(f"{broker.name}: no KRaft quorum status: {out.strip()[-300:]}")
            status = out[out.find("ClusterId"):].strip()      # after the JVM's log4j warnings
            record["quorum_status"] = self.detail["quorum_status"] = status[:600]
            wait_full_isr(cluster, self.isr_timeout_s)

    def _heal(self, ctx: FaultContext) -> None:
        note_heal_starts(self, ensure_running(ctx.cluster.nodes(), ctx))


def migration_words(name: str, names: list[str], detail: dict[str, Any]) -> str:
    return "the cluster migrated from ZooKeeper to KRaft"
