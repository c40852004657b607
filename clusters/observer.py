"""Samples cluster metadata every ~200 ms and records each change as an
`observe` event in the run history (leader, isr, controller).

Leaders and ISRs are the controller's view: for our own clusters every broker is
asked and the newest leader epoch wins (clusters/metadata_probe.py), so a leader cut
off from the quorum that still answers clients cannot hide an election.

The observer only reads; it never acts on the cluster. A sample that cannot
be taken (no broker answers) is recorded once as `metadata-unavailable` and
again as `metadata-available` when sampling recovers, so gaps in the timeline
are visible rather than silent.
"""
from __future__ import annotations

import logging
import threading
import time

from clusters.api import ElectedView, MetadataLimits
from core.history import EventLog

log = logging.getLogger(__name__)


class MetadataObserver:
    def __init__(self, cluster, events: EventLog, interval: float = 0.2,
                 topics: list[str] | None = None):
        self.cluster = cluster
        self.events = events
        self.interval = interval
        self.topics = topics
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
            return self.cluster.elected_partitions(self.topics, timeout=1.0)
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
