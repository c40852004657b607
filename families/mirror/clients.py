"""The mirror family's clients: the target cluster (a second DockerCluster on its own
internal network) and MirrorMaker 2 (families/mirror/mm2.py), started before the load
(Family.before_load: the target takes ~20 s to start, which would otherwise eat the
producers' duration); and the mirror drain.

Removal: `mirror-stop` on the run's finalizers, pushed before anything starts, removes
MM2's container (its log kept as logs/mm2.log) and the target (its nodes' logs under
logs/target/). On the normal path the mirror drain runs it once it has read the
target; after a Ctrl-C or a failure the teardown does, before the source's
cluster-stop. The target's containers, network and mounts carry the run id
`<run>-mirror`: the source's stop sweeps the run id's resources, the target's its own,
so either can go first without taking the other's; `harness gc` reaps both (their
owner is this process). The MM2 container carries the run's own id.

The mirror drain: wait for MM2 to catch up (families/mirror/catchup.py, bounded by
catch_up_timeout_s; a `mirror-caught-up` event says per source partition what it
saw and how long it waited), then read each mirrored topic on the target whole, as
the final drain reads the source: read_uncommitted, or read_committed with
exactly_once (MM2's aborted transactions after a restart are not copies a consumer
of the target would see). Its rows are `consumed` rows with cluster = target.
"""
from __future__ import annotations

import dataclasses
import logging
import time

from clusters.docker_cluster import DockerCluster
from core.context import RunContext
from core.errors import HarnessError
from core.history import HistoryWriter
from families.mirror.catchup import CatchUpWait, read_whole
from families.mirror.checkpoints import checkpoints_topic, commit_rows, parse_checkpoint
from families.mirror.failover import Failover
from families.mirror.jars import mirror_jars
from families.mirror.kill import MirrorMakerKill
from families.mirror.lag import LagSampler
from families.mirror.link import LinkProxy
from families.mirror.mm2 import MirrorMaker, offsets_topic, properties, task_failures
from families.mirror.section import CAUGHT_UP_EVENT, CONFIG_EVENT, FAILOVER_EVENT, TARGET, target_topic
from faults.sidecar import MIRROR_MAKER
from workloads.drain import drain as drain_topics
from workloads.spec import DrainSpec

log = logging.getLogger("harness.mirror")
FINALIZER = "mirror-stop"


class MirrorWorkloads:
    def __init__(self, ctx: RunContext, workload):       # a families.workload.Workload
        self.ctx, self.spec = ctx, workload.mirror
        self.ready_timeout_s = workload.warmup_timeout_s
        mirrored = set(self.spec.mirrored)
        # the scenario's groups reading mirrored topics: those that fail over
        self.groups = {g.group_id: set(g.topics) & mirrored for g in workload.consumers
                       if set(g.topics) & mirrored}
        self.target: DockerCluster | None = None
        self.mm2: MirrorMaker | None = None
        self.kill: MirrorMakerKill | None = None
        self.lag: LagSampler | None = None
        self.link: LinkProxy | None = None
        self._topics_seen = False

    @property
    def isolation(self) -> str:
        return "read_committed" if self.spec.exactly_once else "read_uncommitted"

    def __enter__(self) -> "MirrorWorkloads":
        ctx, spec = self.ctx, self.spec
        self.target = DockerCluster(spec.target.cluster(spec.source_version),
                                    run_id=f"{ctx.run_id}-mirror")
        ctx.finalizers.push(FINALIZER, self._remove)
        self.target.start()
        version = self.target.spec.kafka.version
        self.mm2 = MirrorMaker(ctx.run_id, self.target.image, mirror_jars(version),
                               ctx.run_dir / "mirror", spec.heap_mb)
        props = properties(spec, ctx.bootstrap, self.target.bootstrap_servers())
        if spec.link_proxy:
            self.link = LinkProxy(ctx.run_id, version).start(ctx.cluster.network_name,
                                                             ctx.bootstrap)
        self.mm2.start(props, ctx.cluster.network_name, self.target.network_name, self.link)
        ctx.events.emit("client", CONFIG_EVENT, "mm2", source_version=spec.source_version,
                        target_version=version, target_brokers=spec.target.brokers,
                        exactly_once=spec.exactly_once, isolation=self.isolation,
                        target_topics={t: target_topic(t) for t in spec.mirrored},
                        container=self.mm2.name, properties=props,
                        link_proxy=None if self.link is None else self.link.ip)
        self._wait_until_copying()
        return self

    def _wait_until_copying(self) -> None:
        """Until MM2 has created the mirrored topics (it copies from then on), at most the
        warm-up's timeout: entered before the producers (before_load), so the load and
        the fault timeline both begin with a mirror that copies. (Seen without it: MM2
        took 29 s to create them on a loaded machine; the producers had sent their
        25 s of records before the warm-up ended, and the faults hit an idle mirror.)"""
        deadline = time.monotonic() + self.ready_timeout_s
        while self.not_ready() and time.monotonic() < deadline:
            time.sleep(1.0)

    def __exit__(self, *exc) -> None:
        self.ctx.finalizers.run(FINALIZER)

    def fault_clusters(self) -> dict:
        """The clusters beside the run's that a fault may act on (`cluster: target`)."""
        return {TARGET: self.target} if self.target is not None else {}

    def fault_processes(self) -> dict:
        """The processes a fault may stop (mm2-kill, mm2-pause: faults/sidecar.py)."""
        return {MIRROR_MAKER: self.mm2} if self.mm2 is not None else {}

    def check(self) -> None:
        if (self.kill is not None and self.kill.down) or (self.mm2 is not None and self.mm2.held):
            return                                   # down on purpose: a heal starts it
        if self.mm2 is not None and self.mm2.status() in ("exited", "dead", "removed"):
            tail = "\n".join(self.mm2.logs().splitlines()[-20:])
            raise HarnessError(f"MirrorMaker 2 ({self.mm2.name}) stopped on its own:\n{tail}")

    def not_ready(self) -> list[str]:
        """Until MM2 has created every mirrored topic on the target (it copies from
        then on): faults before that would hit a mirror that has not begun."""
        if self._topics_seen:
            return []
        want = {target_topic(t) for t in self.spec.mirrored}
        try:
            have = set(self.target.admin().list_topics(timeout=2).topics)
        except Exception:  # noqa: BLE001 - the target busy: ask again next time
            have = set()
        self._topics_seen = want <= have
        if self._topics_seen and self.lag is None:
            self.lag = LagSampler(self.ctx.bootstrap, self.target.bootstrap_servers(),
                                  {t: target_topic(t) for t in self.spec.mirrored},
                                  self.ctx.events,
                                  offsets_topic() if self.spec.exactly_once else None).start()
        if self._topics_seen and self.spec.kill is not None and self.kill is None:
            # at_s counts from here: MM2 copies from now on, however long it took to start
            self.kill = MirrorMakerKill(self.mm2, self.spec.kill, self.ctx.events).start()
        return [] if self._topics_seen else [
            f"MirrorMaker 2 has not created {', '.join(sorted(want - have))} on the target"]

    def stop(self, graceful: bool) -> None:
        """Nothing: MM2 copies on until the mirror drain has waited for it."""

    def drain(self) -> dict:
        """Wait for MM2 to catch up (bounded), read the target's mirrored topics whole,
        then remove MM2 and the target."""
        ctx, spec = self.ctx, self.spec
        if self.lag is not None:
            self.lag.stop()                   # the load has ended: the catch-up measures on
        if self.kill is not None:
            self.kill.cancel(restart=True)    # not played by now: not played (the event says)
        wait = CatchUpWait(ctx.bootstrap, self.target.bootstrap_servers(), spec.mirrored,
                           offsets_topic(), self.isolation, spec.catch_up_timeout_s)
        caught_up = wait.run()
        if spec.failover and self.groups:
            self._failover()        # first: it waits for MM2 to checkpoint the last commits
        checkpoints = self._record_checkpoints()
        failed = self._task_failures()
        ctx.events.emit("client", CAUGHT_UP_EVENT, "mm2", caught_up=caught_up,
                        waited_s=wait.waited_s, partitions=wait.partitions,
                        mm2_killed=self.kill is not None and self.kill.killed,
                        checkpoints=checkpoints, task_failures=failed)
        if not caught_up:
            log.warning("mirror drain: MirrorMaker 2 had not caught up after %.0f s: %s",
                        wait.waited_s, [r for r in wait.partitions if not r["caught_up"]][:4])
        target_ctx = dataclasses.replace(ctx, cluster=self.target, client_config={},
                                         fixed_bootstrap=self.target.bootstrap_servers())
        topics = tuple(target_topic(t) for t in spec.mirrored)
        result = drain_topics(DrainSpec(topics=topics, isolation=self.isolation), target_ctx,
                              cluster=TARGET)
        ctx.events.flush()
        ctx.finalizers.run(FINALIZER)
        # not caught up: the drain phase fails (the report's "what else went wrong"
        # names it), as the records behind are not judged: a run must not pass unseen so
        incomplete = [] if caught_up else [f"{r['topic']}-{r['partition']}: MirrorMaker 2 "
                                           f"{r['behind']} records behind"
                                           for r in wait.partitions if not r["caught_up"]]
        return {TARGET: {"complete": result.complete and caught_up, "caught_up": caught_up,
                         "waited_s": wait.waited_s, "records": result.records,
                         **({"incomplete": incomplete[:10]} if incomplete else {})}}

    def _task_failures(self) -> list[dict]:
        """The tasks Connect gave up on (mm2.task_failures): the report names them beside
        what they left undone. A log that cannot be read says nothing (the run's log copy
        still has it)."""
        try:
            return task_failures(self.mm2.logs()) if self.mm2 is not None else []
        except Exception as e:  # noqa: BLE001 - a drain goes on without these words
            log.warning("mirror drain: MirrorMaker 2's log could not be read: %s", e)
            return []

    def _failover(self) -> None:
        """The groups fail over to the target (failover.py); the event says how."""
        ctx, spec = self.ctx, self.spec
        failover = Failover(ctx, ctx.bootstrap, self.target.bootstrap_servers(), self.groups,
                            {t: target_topic(t) for t in spec.mirrored}, self.isolation,
                            spec.catch_up_timeout_s, spec.emit_checkpoints_interval_s).run()
        ctx.events.emit("client", FAILOVER_EVENT, "mm2", **failover)

    def _record_checkpoints(self) -> int:
        """MM2's checkpoints of the mirrored topics (every translation it emitted during
        the run), read from the target whole, as `commits` rows (checkpoints.py)."""
        sources = {target_topic(t): t for t in self.spec.mirrored}
        records = read_whole(self.target.bootstrap_servers(), checkpoints_topic(), self.isolation)
        n = 0
        with HistoryWriter(self.ctx.run_dir, "commits", self.ctx.run_id,
                           writer_name="mm2-checkpoints") as w:
            for partition, offset, ts_ms, key, value in records:
                c = parse_checkpoint(key, value)
                if c is None or c.topic not in sources:
                    continue
                w.extend(commit_rows(c, sources[c.topic], (partition, offset), ts_ms * 1000))
                n += 1
        log.info("mirror drain: %d checkpoints of %s recorded", n, checkpoints_topic())
        return n

    def _remove(self) -> None:
        """MM2's log and container, then the target's logs and the target; each step
        runs even when one before failed."""
        logs = self.ctx.run_dir / "logs"
        if self.lag is not None:
            self.lag.stop()
        if self.kill is not None:
            self.kill.cancel(restart=False)
        try:
            if self.mm2 is not None and self.mm2.container is not None:
                logs.mkdir(parents=True, exist_ok=True)
                (logs / "mm2.log").write_text(self.mm2.logs())
        finally:
            try:
                if self.mm2 is not None:
                    self.mm2.remove()
                if self.link is not None:
                    self.link.remove()
            finally:
                if self.target is not None:
                    try:
                        self.target.collect_logs(logs / "target")
                    finally:
                        self.target.stop()


