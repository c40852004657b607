"""The compacted family's clients: one writer per item (our verifiable producer with
per-key versions and tombstones, workloads/producer.py) and the drain that waits for
the log cleaner before it reads each compacted topic whole.

How the drain knows the cleaner has passed (families/compacted/drain.py has the
pieces): the cleaner never cleans a partition's active segment, so it first rolls it:
once segment.ms has passed since the last write, one roll record per partition (key
`harness.roll`, no record_id) starts a new segment at offset r. Every workload record
is then below r, in segments the cleaner may clean. The cleaner writes the first
offset it has not cleaned (per partition) to `cleaner-offset-checkpoint` in each
broker's log dir; the drain reads that file (docker exec) on the partition's leader
until it is at least r, every WAIT_POLL_S, at most clean_timeout_s. Then it reads the
topics whole, and writes a `compacted-cleaned` event: per partition r, the leader's
checkpoint, every replica's, whether it passed, and how long it waited.
"""
from __future__ import annotations

import time

from core.context import RunContext
from core.errors import HarnessError
from families.compacted.drain import CleanerWait, roll_partitions
from families.compacted.section import CLEANED_EVENT, CONFIG_EVENT
from workloads.drain import drain as drain_topics
from workloads.producer_churn import end_load, start_producer
from workloads.spec import DrainSpec


class CompactedWorkloads:
    def __init__(self, ctx: RunContext, workload):       # a families.workload.Workload
        self.ctx, self.spec = ctx, workload
        self.writers: list = []
        self.started_at: float | None = None
        self.stopped_at: float | None = None

    def __enter__(self) -> "CompactedWorkloads":
        for c in self.spec.compacted:
            seed = self.ctx.rng(f"compacted-{c.name}").randrange(1 << 31)
            self.ctx.events.emit("client", CONFIG_EVENT, c.name, topic=c.topic, keys=c.keys,
                                 tombstone_rate=c.tombstone_rate, configs=c.topic_configs,
                                 delete_retention_ms=c.delete_retention_ms, seed=seed)
            self.writers.append(start_producer(c.producer(self.spec.duration_s, seed), self.ctx))
        self.started_at = time.monotonic()
        return self

    def check(self) -> None:
        for p in self.writers:
            if p.exitcode not in (None, 0):
                raise HarnessError(f"compacted writer {p.spec.name} exited with {p.exitcode} "
                                   "(its events are in the run's history)")

    def __exit__(self, *exc) -> None:
        self.stop(graceful=False)

    def stop(self, graceful: bool) -> None:
        """Graceful: each writer ends its duration and waits for its outcomes."""
        if graceful and self.started_at is not None:
            end_load(self.writers, self.ctx, self.started_at, self.spec.duration_s)
        for p in self.writers:
            if p.result is None:
                p.stop(timeout=None if graceful else 10.0)
        if self.stopped_at is None:
            self.stopped_at = time.monotonic()

    def drain(self) -> dict:
        """Per topic: roll, wait for the cleaner (bounded), read whole."""
        out = {}
        for c in self.spec.compacted:
            out[c.topic] = self._drain_topic(c)
        return out

    def _drain_topic(self, c) -> dict:
        ctx = self.ctx
        since_last = time.monotonic() - (self.stopped_at or time.monotonic())
        time.sleep(max(0.0, c.segment_ms / 1000 + 0.5 - since_last))   # so the roll rolls
        rolls = roll_partitions(ctx, c.topic)
        wait = CleanerWait(ctx, c.topic, rolls, c.clean_timeout_s)
        passed = wait.run()
        read_start = time.time_ns() // 1000
        result = drain_topics(DrainSpec(topics=(c.topic,), isolation="read_uncommitted"), ctx)
        ctx.events.emit("client", CLEANED_EVENT, c.name, topic=c.topic, passed=passed,
                        waited_s=wait.waited_s, read_start_us=read_start,
                        partitions=wait.partitions, records=result.records,
                        drain_complete=result.complete)
        ctx.events.flush()
        return {"complete": result.complete, "cleaner_passed": passed,
                "waited_s": wait.waited_s, "records": result.records}
