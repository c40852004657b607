"""The run's workload: consumer groups, producers and Kafka's Java clients, started and
stopped side by side here; the warm-up that waits for them, and the final drain.

`Workloads` is entered by the workloads-start phase on the run's finalizers; its
finalizer stops everything it started: gracefully on the normal path (the
workloads-stop phase: producers end their duration, consumers catch up), quickly
when the run was interrupted or failed.
"""
from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import TYPE_CHECKING

import pyarrow.compute as pc

from core.context import RunContext
from core.errors import HarnessError
from core.history import WORKLOAD_DIED
from harness.history_tail import HistoryTail
from harness.phases import FAILED
from harness.run import Run
from workloads.consumer import ConsumerGroup
from workloads.drain import drain as drain_all
from workloads.java_clients import run_java_consumer, run_java_producer
from workloads.producer_churn import start_producer

if TYPE_CHECKING:
    from harness.scenario import Workload

DELIVERY_SLACK_S = 30.0
CATCH_UP_QUIET_S = 3.0       # consumers are caught up once they read nothing new this long
CATCH_UP_MAX_S = 30.0


class Workloads:
    def __init__(self, ctx: RunContext, workload: "Workload"):
        self.ctx, self.spec = ctx, workload
        self.producers: list = []
        self.groups: list = []
        self.java: list[threading.Thread] = []
        self.java_stop = threading.Event()
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
            self._java(f"java-producer-j{spec.prefix}", self._java_producer, spec)
        for spec in w.java_consumers:
            self._java(f"java-consumer-{spec.name}", self._java_consumer, spec)
        return self

    def _java(self, name: str, fn: Callable, spec) -> None:
        def body() -> None:
            try:
                fn(spec)
            except Exception as e:  # noqa: BLE001 - reported in the history, the run goes on
                self.ctx.events.emit("client", WORKLOAD_DIED, name, workload="java",
                                     error=str(e)[:500])
        t = threading.Thread(target=body, name=name, daemon=True)
        t.start()
        self.java.append(t)

    def _java_producer(self, spec) -> None:
        run_java_producer(self.ctx, topic=spec.topic, max_messages=spec.max_messages,
                          prefix=spec.prefix, acks=spec.acks, throughput=spec.throughput,
                          config=spec.config, should_stop=self.java_stop.is_set,
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
            for p in self.producers:
                left = self.started_at + self.spec.duration_s - time.monotonic()
                if not p.wait(max(0.0, left) + p.spec.delivery_timeout_ms / 1000 + DELIVERY_SLACK_S):
                    p.stop()
        for p in self.producers:
            if p.result is None:
                p.stop(timeout=None if graceful else 10.0)
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
        tail = HistoryTail(self.ctx.run_dir, "consumed", ["offset"])
        tail.poll()
        deadline = time.monotonic() + CATCH_UP_MAX_S
        quiet_since = time.monotonic()
        while time.monotonic() < deadline and time.monotonic() - quiet_since < CATCH_UP_QUIET_S:
            time.sleep(0.5)
            if sum(b.num_rows for b in tail.poll()):
                quiet_since = time.monotonic()


# -- the phases ------------------------------------------------------------------------

def start(run: Run, detail: dict) -> None:
    """workloads-start: the workload entered on the run's finalizers; its stop is
    graceful unless the run stopped early."""
    load = Workloads(run.ctx, run.scenario.workload)
    run.ctx.finalizers.push("workloads-stop", lambda: load.stop(graceful=run.stopped_in is None))
    run.load = load.__enter__()
    detail.update(producers=[p.spec.name for p in load.producers],
                  groups=[g.spec.group_id for g in load.groups], java=len(load.java))


def warm_up(run: Run, detail: dict) -> None:
    """Until every partition written to has its first ack: faults before then would
    hit a workload that has not started, and tell nothing."""
    s = run.scenario
    want = set(s.written_partitions)
    tail = HistoryTail(run.ctx.run_dir, "produced", ["topic", "partition", "status"])
    acked: set = set()
    deadline = time.monotonic() + s.workload.warmup_timeout_s
    while not want <= acked:
        for batch in tail.poll():
            rows = batch.filter(pc.equal(batch["status"], "acked"))
            acked |= set(zip(rows["topic"].to_pylist(), rows["partition"].to_pylist(), strict=True))
        run.load.check()
        if time.monotonic() > deadline:
            raise HarnessError(f"no ack on {sorted(want - acked)[:5]} after "
                               f"{s.workload.warmup_timeout_s:g} s: the cluster takes no writes")
        time.sleep(0.25)
    detail["partitions"] = len(want)


def stop(run: Run, detail: dict) -> None:
    run.ctx.finalizers.run("workloads-stop")
    detail["producers"] = {p.spec.name: {"exitcode": p.exitcode,
                                         "indeterminate_written": p.result.indeterminate
                                         if p.result else None} for p in run.load.producers}


def drain(run: Run, detail: dict) -> None:
    result = drain_all(run.scenario.drain, run.ctx)
    detail.update(records=result.records, partitions=result.partitions,
                  complete=result.complete, seconds=result.seconds)
    if not result.complete:
        detail.update(incomplete=result.incomplete, _outcome=FAILED)
