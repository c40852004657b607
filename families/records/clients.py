"""The records family's clients: consumer groups, producers (transactional ones too:
workloads/transactional.py) and Kafka's Java clients, started and stopped side by side.

`Workloads` is entered by the runner's workloads-start phase on the run's finalizers;
its finalizer stops everything it started: gracefully on the normal path (the
workloads-stop phase: producers end their duration, consumers catch up), quickly
when the run was interrupted or failed.
"""
from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterable

import pyarrow as pa
import pyarrow.compute as pc

from core.context import RunContext
from core.errors import HarnessError
from core.history import WORKLOAD_DIED
from workloads.consumer import ConsumerGroup
from workloads.history_tail import HistoryTail
from workloads.java_clients import run_java_consumer, run_java_producer
from workloads.producer_churn import end_load, start_producer
from workloads.spec import topics_read_by_group

CATCH_UP_QUIET_S = 3.0       # consumers are caught up once they read nothing new this long
CATCH_UP_MAX_S = 30.0


class ReadEnds:
    """The highest offset seen per key (e.g. (group, topic, partition)) in history batches."""
    def __init__(self) -> None:
        self.ends: dict[tuple, int] = {}

    def add(self, batches: Iterable[pa.Table], keys: list[str]) -> int:
        """Fold the batches in; how many rows they held."""
        rows = 0
        for b in batches:
            rows += b.num_rows
            if b.num_rows:
                for row in b.group_by(keys).aggregate([("offset", "max")]).to_pylist():
                    key = tuple(row[k] for k in keys)
                    self.ends[key] = max(self.ends.get(key, -1), row["offset_max"])
        return rows


def caught_up(acked_end: dict[tuple, int], read_end: dict[tuple, int],
              readers: dict[str, set[str]]) -> bool:
    """Each group has read each partition of its topics up to the partition's last acked
    offset; False while a group reads a topic with no acked record (nothing to tell by)."""
    acked_topics = {t for t, _ in acked_end}
    if not readers or any(not topics <= acked_topics for topics in readers.values()):
        return False
    return all(read_end.get((g, t, p), -1) >= end for (t, p), end in acked_end.items()
               for g, topics in readers.items() if t in topics)


class Workloads:
    def __init__(self, ctx: RunContext, workload):      # a families.workload.Workload
        self.ctx, self.spec = ctx, workload
        self.producers: list = []
        self.groups: list = []
        self.java: list[threading.Thread] = []
        self.java_producers: list[threading.Thread] = []     # of self.java
        self.java_stop = threading.Event()               # Kafka's Java consumers
        self.java_producers_stop = threading.Event()     # Kafka's Java producers
        self.started_at: float | None = None
        self.stopped = False

    # -- made --------------------------------------------------------------------
    def __enter__(self) -> "Workloads":
        ctx, w = self.ctx, self.spec
        ctx.events.emit("phase", "load-start")
        self.started_at = time.monotonic()
        for spec in w.consumers:
            self.groups.append(ConsumerGroup(spec, ctx).start())
        for spec in w.producers:
            self.producers.append(start_producer(spec, ctx, w.clients_version))
        for spec in w.java_producers:
            self.java_producers.append(
                self._java(f"java-producer-j{spec.prefix}", self._java_producer, spec))
        for spec in w.java_consumers:
            self._java(f"java-consumer-{spec.name}", self._java_consumer, spec)
        return self

    def _java(self, name: str, fn: Callable, spec) -> threading.Thread:
        def body() -> None:
            try:
                fn(spec)
            except Exception as e:  # noqa: BLE001 - reported in the history, the run goes on
                self.ctx.events.emit("client", WORKLOAD_DIED, name, workload="java",
                                     error=str(e)[:500])
        t = threading.Thread(target=body, name=name, daemon=True)
        t.start()
        self.java.append(t)
        return t

    def _java_producer(self, spec) -> None:
        run_java_producer(self.ctx, topic=spec.topic, max_messages=spec.max_messages,
                          prefix=spec.prefix, acks=spec.acks, throughput=spec.throughput,
                          config=spec.config, should_stop=self.java_producers_stop.is_set,
                          timeout_s=self.spec.duration_s + 120,
                          clients_version=self.spec.clients_version)

    def _java_consumer(self, spec) -> None:
        run_java_consumer(self.ctx, topic=spec.topic, group_id=spec.group_id, name=spec.name,
                          isolation=spec.isolation, auto_commit=spec.auto_commit,
                          config=spec.config, should_stop=self.java_stop.is_set,
                          timeout_s=self.spec.duration_s + 600,
                          clients_version=self.spec.clients_version)

    def check(self) -> None:
        """A producer that ended with an error before the load began: nothing to judge."""
        for p in self.producers:
            if p.exitcode not in (None, 0):
                raise HarnessError(f"producer {p.spec.name} exited with {p.exitcode} "
                                   f"(its events are in the run's history)")

    # -- removed -----------------------------------------------------------------
    def __exit__(self, *exc) -> None:
        self.stop(graceful=False)

    def stop(self, graceful: bool) -> None:
        """Graceful: producers end their duration, consumers catch up; quick otherwise.
        Idempotent: an interrupted stop is run again by the teardown."""
        if graceful and self.started_at is not None:
            end_load(self.producers, self.ctx, self.started_at, self.spec.duration_s)
        for p in self.producers:
            if p.result is None:
                p.stop(timeout=None if graceful else 10.0)
        if graceful and self.started_at is not None:
            # Kafka's Java producers too run their duration (or their max_messages): with
            # no producer of ours to wait for, the load would end with the faults
            for t in self.java_producers:
                t.join(self.ctx.load_left(self.started_at, self.spec.duration_s))
        # ... and no longer: the groups' catch-up waits for quiet, which a producer still
        # writing never gives (a Java-only run sent 219 % of its plan, 30 s past its end)
        self.java_producers_stop.set()
        if graceful and self.groups:
            self._catch_up()
        self.java_stop.set()
        for g in self.groups:
            g.stop(timeout=30.0 if graceful else 10.0)
        for t in self.java:
            t.join(60.0 if graceful else 35.0)
        if not self.stopped and self.ctx.events is not None:
            self.ctx.events.emit("phase", "load-end")
        self.stopped = True

    def _catch_up(self) -> None:
        """Until every group has read each partition of its topics up to its last acked
        record, or, where that cannot tell (a topic no producer of ours writes, a record
        acked in an aborted transaction), until the groups read nothing new for a while."""
        readers = topics_read_by_group(self.spec)
        consumed = HistoryTail(self.ctx.run_dir, "consumed", ["group_id", "topic", "partition", "offset"])
        produced = HistoryTail(self.ctx.run_dir, "produced", ["topic", "partition", "offset", "status"])
        acked_end, read_end = ReadEnds(), ReadEnds()
        read_end.add(consumed.each_new(), ["group_id", "topic", "partition"])
        deadline = time.monotonic() + CATCH_UP_MAX_S
        quiet_since = time.monotonic()
        while time.monotonic() < deadline and time.monotonic() - quiet_since < CATCH_UP_QUIET_S:
            acked_end.add((b.filter(pc.equal(b["status"], "acked")) for b in produced.each_new()),
                          ["topic", "partition"])
            if caught_up(acked_end.ends, read_end.ends, readers):
                return
            time.sleep(0.5)
            if read_end.add(consumed.each_new(), ["group_id", "topic", "partition"]):
                quiet_since = time.monotonic()
