"""Samples cluster metadata every ~200 ms and records each change as an
`observe` event in the run history (leader, isr, controller).

Leaders and ISRs are the controller's view: for our own clusters every broker is
asked and the newest leader epoch wins (clusters/metadata_probe.py), so a leader cut
off from the quorum that still answers clients cannot hide an election.

The observer only reads; it never acts on the cluster. A sample that cannot
be taken (no broker answers) is recorded once as `metadata-unavailable` and
again as `metadata-available` when sampling recovers, so gaps in the timeline
are visible rather than silent.

Share groups (KIP-932): given `share_watch` [(group, topic, partition)], it also follows
`__share_group_state` (not recorded as leader/isr events of its own) and records an
`observe share-coordinator` event whenever the broker that persists one watched
share-partition's state changes: the leader of the state partition its key maps to
(clusters/coordinator.share_state_partition, the broker's own computation). The key
needs the topic's id, read once (Metadata v12, clusters/topic_metadata.py).
"""
from __future__ import annotations

import logging
import threading
import time

from clusters.api import ElectedView, MetadataLimits
from clusters.coordinator import SHARE_STATE_TOPIC, share_key, share_state_partition
from clusters.kafka_wire import WireSecurity
from clusters.topic_metadata import describe_topics
from core.history import EventLog

log = logging.getLogger(__name__)


class MetadataObserver:
    def __init__(self, cluster, events: EventLog, interval: float = 0.2,
                 topics: list[str] | None = None,
                 share_watch: list[tuple[str, str, int]] | None = None):
        self.cluster = cluster
        self.events = events
        self.interval = interval
        self.topics = topics
        self.share_watch = list(share_watch or [])
        self._topic_ids: dict[str, str] = {}
        self._share: dict[tuple[str, str, int], int | None] = {}
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._leaders: dict[tuple[str, int], int | None] = {}
        self._elected: dict[tuple[str, int], tuple[int | None, int | None]] = {}
        self._isr: dict[tuple[str, int], tuple[int, ...]] = {}
        self._controller: str | None = None
        self._available = True
        self._limited: set[str] = set()
        self.samples = 0

    def start(self) -> "MetadataObserver":
        # which node each broker id is, for the report's words (a broker that never leads
        # appears in no leader event)
        try:
            self.events.emit("observe", "brokers", None,
                             brokers={str(n.node_id): n.name for n in self.cluster.brokers()})
        except Exception as e:  # noqa: BLE001 - names are a convenience, never a reason to stop
            log.debug("observer: no broker names: %s", e)
        self._thread = threading.Thread(target=self._run, name="metadata-observer", daemon=True)
        self._thread.start()
        return self

    def leader(self, topic: str, partition: int) -> int | None:
        """The leader last observed (None: none yet, or offline)."""
        return self._leaders.get((topic, partition))

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=10)
        self.events.flush()

    def __enter__(self) -> "MetadataObserver":
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()

    def _run(self) -> None:
        while not self._stop.is_set():
            started = time.monotonic()
            try:
                self.sample()
            except Exception as e:  # never let the observer die mid-run
                log.debug("observer sample failed: %s", e)
            self._stop.wait(max(0.0, self.interval - (time.monotonic() - started)))

    def _partitions(self):
        """The controller's view where the cluster can give it (api.ElectedView), else
        the metadata a client gets."""
        if isinstance(self.cluster, ElectedView):
            wanted = self.topics
            if self.share_watch and wanted is not None:
                wanted = [*wanted, SHARE_STATE_TOPIC]
            return self.cluster.elected_partitions(wanted, timeout=1.0)
        return self.cluster.partitions(timeout=1.5)

    def sample(self) -> None:
        try:
            parts = self._partitions()
        except Exception as e:
            if self._available:
                self._available = False
                self.events.emit("observe", "metadata-unavailable", None, error=str(e)[:200])
            return
        if not self._available:
            self._available = True
            self.events.emit("observe", "metadata-available", None)
        self.samples += 1
        for p in parts:
            if self.topics is not None and p.topic not in self.topics:
                continue
            key = (p.topic, p.partition)
            elected = (p.leader, p.leader_epoch)
            if key not in self._elected or self._elected[key] != elected:
                # a new epoch with the same leader is an election too (it was re-elected)
                self.events.emit("observe", "leader", _broker_name(self.cluster, p.leader),
                                 topic=p.topic, partition=p.partition, leader=p.leader,
                                 leader_epoch=p.leader_epoch, previous=self._leaders.get(key))
                self._leaders[key], self._elected[key] = p.leader, elected
            isr = tuple(sorted(p.isr))
            if self._isr.get(key) != isr:
                self.events.emit("observe", "isr", None, topic=p.topic, partition=p.partition,
                                 isr=list(isr), replicas=list(p.replicas),
                                 previous=list(self._isr[key]) if key in self._isr else None)
                self._isr[key] = isr
        controller = self.cluster.active_controller()
        name = controller.name if controller is not None else None
        if name != self._controller:
            self.events.emit("observe", "controller", name,
                             node_id=controller.node_id if controller is not None else None,
                             previous=self._controller)
            self._controller = name
        if isinstance(self.cluster, MetadataLimits):
            self._say_limits(self.cluster.limits())
        if self.share_watch:
            self._share_sample({p.partition: p.leader for p in parts if p.topic == SHARE_STATE_TOPIC})

    def _share_sample(self, state: dict[int, int | None]) -> None:
        """A `share-coordinator` event for each watched share-partition whose state
        partition's leader changed (nothing before `__share_group_state` exists)."""
        if not state:
            state = self._wire_metadata([SHARE_STATE_TOPIC]).get(SHARE_STATE_TOPIC, {})
        missing = sorted({t for _, t, _ in self.share_watch} - set(self._topic_ids))
        if missing:
            self._topic_ids.update(self._wire_metadata(missing, ids=True))
        for watch in self.share_watch:
            group, topic, partition = watch
            if not state or topic not in self._topic_ids:
                continue
            key = share_key(group, self._topic_ids[topic], partition)
            state_partition = share_state_partition(key, len(state))
            leader = state.get(state_partition)
            if watch in self._share and self._share[watch] == leader:
                continue
            self.events.emit("observe", "share-coordinator", _broker_name(self.cluster, leader),
                             group_id=group, topic=topic, partition=partition, coordinator=leader,
                             previous=self._share.get(watch), state_partition=state_partition)
            self._share[watch] = leader

    def _wire_metadata(self, topics: list[str], ids: bool = False) -> dict:
        """{topic: leaders by partition} (or {topic: id}) from one broker's Metadata v12;
        {} when none answers in time (the next sample asks again)."""
        try:
            security = WireSecurity.from_client_config(self.cluster.client_config())
            infos = describe_topics(self.cluster.bootstrap_servers(), topics, timeout_s=1.0,
                                    attempt_s=1.0, security=security)
        except Exception as e:  # noqa: BLE001 - a missed sample, not a reason to stop
            log.debug("observer: no share metadata: %s", e)
            return {}
        return {t: (i.topic_id if ids else i.leaders) for t, i in infos.items() if not i.error}

    def _say_limits(self, limits: dict[str, str]) -> None:
        """What the cluster's credentials do not let it see, once each (a `metadata-limited`
        observation: the report names it; the run goes on)."""
        for what, why in limits.items():
            if what not in self._limited:
                self._limited.add(what)
                self.events.emit("observe", "metadata-limited", what, reason=why)


def _broker_name(cluster, broker_id: int | None) -> str | None:
    if broker_id is None:
        return None
    try:
        return cluster.broker(broker_id).name
    except KeyError:
        return str(broker_id)
