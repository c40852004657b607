"""The drain: the final read of every partition, after all faults are healed.

A fresh consumer, *assigned* (no group membership, no commits) to every
partition of the topics, reads from the earliest offset to the end offset
taken at drain start (the high watermark; with read_committed the client's
ListOffsets returns the last stable offset). Rows go to `consumed` as
consumer `drain`, phase `drain`.

It always ends by itself: a partition is done when a record at or past
end-1 arrives or the client reports end-of-partition at or past `end`
(read_committed skips control records and aborted data, so "the last record"
may never arrive). The drain gives up on what is left after `timeout_s`, or
after `stall_s` without progress, and says so in an events row
(`drain-result`, detail.complete=false, with each unfinished partition, its
position, its end offset and the reason).
"""
from __future__ import annotations

import time
import uuid
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from confluent_kafka import Consumer, KafkaError, KafkaException, TopicPartition

from core.history import HistoryWriter, now_us
from workloads.connection import connected
from workloads.records import pipeline_output_of, record_id_of, record_id_of_headers
from workloads.spec import DrainSpec

if TYPE_CHECKING:
    from core.context import RunContext

DRAIN = "drain"


@dataclass
class _Part:
    topic: str
    partition: int
    end: int | None = None             # exclusive end offset; None = unknown yet
    position: int = 0                  # next offset we expect
    done: bool = False
    reason: str = ""


@dataclass(frozen=True)
class DrainResult:
    complete: bool
    records: int
    partitions: int
    incomplete: list[dict[str, Any]] = field(default_factory=list)
    seconds: float = 0.0


def _end_offsets(consumer: Consumer, parts: list[_Part], timeout: float) -> None:
    for p in parts:
        if p.end is not None:
            continue
        try:
            low, high = consumer.get_watermark_offsets(TopicPartition(p.topic, p.partition),
                                                       timeout=timeout, cached=False)
            p.end, p.position = high, max(low, 0)
            p.done = high <= low
        except KafkaException as e:
            p.reason = f"no end offset: {e.args[0].name()}"


def drain(spec: DrainSpec, run: "RunContext", cluster: str | None = None) -> DrainResult:
    """`cluster`: the rows' `consumed.cluster` (a mirror's `target`; None: the run's
    one cluster)."""
    bootstrap, run_dir, run_id, events = run.bootstrap, run.dir, run.run_id, run.events
    spec = connected(spec, run)
    started = time.monotonic()
    deadline = started + spec.timeout_s
    if events:
        events.emit("phase", "drain-start", DRAIN, topics=list(spec.topics),
                    isolation=spec.isolation)
    conf = {
        "bootstrap.servers": bootstrap,
        "group.id": f"harness-drain-{uuid.uuid4().hex[:8]}",   # never joined, never committed
        "enable.auto.commit": False,
        "enable.auto.offset.store": False,
        "isolation.level": spec.isolation,
        "auto.offset.reset": "earliest",
        "enable.partition.eof": True,
        **spec.client_config,
    }
    consumer = Consumer(conf)
    writer = HistoryWriter(run_dir, "consumed", run_id, writer_name=f"drain-{uuid.uuid4().hex[:6]}",
                           flush_rows=20000, flush_seconds=1.0)
    problems: list[dict[str, Any]] = []
    parts: list[_Part] = []
    records = 0
    try:
        parts = _partitions(consumer, spec.topics, deadline, problems)
        _end_offsets(consumer, parts, timeout=5)
        records = _read_all(consumer, parts, writer, spec, deadline, cluster)
        for p in parts:
            if not p.done:
                problems.append({"topic": p.topic, "partition": p.partition,
                                 "position": p.position, "end_offset": p.end,
                                 "reason": p.reason or "timed out"})
    finally:
        try:
            consumer.close()
        finally:
            writer.close()
    result = DrainResult(complete=not problems, records=records, partitions=len(parts),
                         incomplete=problems, seconds=round(time.monotonic() - started, 3))
    if events:
        events.emit("client", "drain-result", DRAIN, complete=result.complete,
                    records=records, partitions=len(parts), incomplete=problems,
                    seconds=result.seconds)
        events.emit("phase", "drain-end", DRAIN, complete=result.complete)
        events.flush()
    return result


def _partitions(consumer: Consumer, topics, deadline: float,
                problems: list[dict[str, Any]]) -> list[_Part]:
    """Every partition of the topics; a topic without metadata is a problem, not an error."""
    parts: list[_Part] = []
    for topic in topics:
        try:
            md = consumer.list_topics(topic, timeout=max(1.0, min(10.0, deadline - time.monotonic()))).topics[topic]
            if md.error is not None:
                raise KafkaException(md.error)
            parts += [_Part(topic, p) for p in sorted(md.partitions)]
        except KafkaException as e:
            problems.append({"topic": topic, "partition": None, "reason":
                             f"no metadata: {e.args[0].name() if e.args else e}"})
    return parts


def _read_all(consumer: Consumer, parts: list[_Part], writer: HistoryWriter, spec: DrainSpec,
              deadline: float, cluster: str | None = None) -> int:
    """Read until every partition is done, the deadline passes or nothing moved for stall_s."""
    by_tp = {(p.topic, p.partition): p for p in parts}
    assigned: set[tuple[str, int]] = set()
    records = 0
    last_progress = time.monotonic()
    last_snap: tuple = ()
    while time.monotonic() < deadline:
        todo = [p for p in parts if not p.done]
        if not todo:
            break
        missing_end = [p for p in todo if p.end is None]
        if missing_end:                # leader may be back: ask again
            _end_offsets(consumer, missing_end, timeout=1)
        new = [p for p in todo if p.end is not None and (p.topic, p.partition) not in assigned]
        if new:
            consumer.incremental_assign([TopicPartition(p.topic, p.partition, p.position)
                                         for p in new])
            assigned.update((p.topic, p.partition) for p in new)
        if not assigned:
            time.sleep(0.5)
        else:
            records += _consume_batch(consumer, by_tp, writer, spec.isolation, records, cluster)
        now = time.monotonic()
        snap = tuple((p.position, p.done, p.end) for p in parts)
        if snap != last_snap:
            last_snap, last_progress = snap, now
        elif now - last_progress > spec.stall_s:
            for p in parts:
                if not p.done:
                    p.reason = p.reason or f"stalled {spec.stall_s:.0f}s without progress"
            break
    return records


def _consume_batch(consumer: Consumer, by_tp: dict, writer: HistoryWriter, isolation: str,
                   first_seq: int = 0, cluster: str | None = None) -> int:
    """One poll's records as `consumed` rows; first_seq: the drain's records so far (its
    poll_seq continues from there)."""
    msgs = consumer.consume(1000, 0.5)
    if not msgs:
        return 0
    recv = now_us()
    cols: dict[str, list] = {"topic": [], "partition": [], "offset": [], "key": [], "record_id": [],
                             "leader_epoch": [], "source_record_id": [], "key_count": [],
                             "pipeline_instance": [], "pipeline_txn": []}
    for m in msgs:
        p = by_tp.get((m.topic(), m.partition()))
        if p is None:
            continue
        err = m.error()
        if err is not None:
            if err.code() == KafkaError._PARTITION_EOF:
                p.position = max(p.position, m.offset())
                if p.end is not None and m.offset() >= p.end:
                    p.done = True
            else:
                p.reason = f"error: {err.name()}"
            continue
        o = m.offset()
        if p.done or (p.end is not None and o >= p.end):
            p.done = True               # past the end taken at drain start: not ours to read
            continue
        k = m.key()
        cols["topic"].append(m.topic())
        cols["partition"].append(m.partition())
        cols["offset"].append(o)
        cols["key"].append(k.decode(errors="replace") if k is not None else None)
        value = m.value()
        # a tombstone (compacted topics) has no value: its record_id is in a header
        cols["record_id"].append(record_id_of(value) if value is not None
                                 else record_id_of_headers(m.headers()))
        cols["leader_epoch"].append(m.leader_epoch())
        # a pipeline's output topic: its input, count, writer instance and transaction
        source, key_count, instance, txn = pipeline_output_of(m.value())
        cols["source_record_id"].append(source)
        cols["key_count"].append(key_count)
        cols["pipeline_instance"].append(instance)
        cols["pipeline_txn"].append(txn)
        p.position = o + 1
        if p.end is not None and p.position >= p.end:
            p.done = True
    cols["poll_seq"] = range(first_seq, first_seq + len(cols["offset"]))
    writer.append_columns(cols, consumer=DRAIN, group_id=None, phase="drain",
                          isolation=isolation, recv_ts_us=recv, cluster=cluster)
    return len(cols["offset"])
