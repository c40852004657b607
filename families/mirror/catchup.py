"""How the mirror drain knows MirrorMaker 2 has caught up, before it reads the target.

MM2's source connector commits, per source partition, the source offset of the last
record it has copied (and the target acknowledged) into its offsets topic on the
target (mm2.offsets_topic(): key `["MirrorSourceConnector", {"cluster", "topic",
"partition"}]`, value `{"offset": n}`), every OFFSET_FLUSH_MS. The source's end offset
of a partition (high watermark) is fixed once the producers have stopped. A partition
is caught up when MM2's committed offset is at least end - 1 (the last record; its
producers are not transactional, so no control record ends the log), or when it
holds no record. The wait polls both every WAIT_POLL_S, at most the spec's
catch_up_timeout_s, and says per partition what it saw.
"""
from __future__ import annotations

import json
import time
import uuid

from confluent_kafka import Consumer, KafkaError, TopicPartition

WAIT_POLL_S = 1.0
CONNECTOR = "MirrorSourceConnector"


def parse_offset_record(key: bytes | None, value: bytes | None) -> tuple[tuple[str, int], int | None] | None:
    """((topic, partition), committed source offset, None for a tombstone) of one record
    of MM2's offsets topic; None for another connector's record or an unreadable one."""
    try:
        name, part = json.loads(key or b"")
        if name != CONNECTOR or not isinstance(part, dict):
            return None
        tp = (str(part["topic"]), int(part["partition"]))
        return tp, (None if value is None else int(json.loads(value)["offset"]))
    except (ValueError, KeyError, TypeError):
        return None


def _consumer(bootstrap: str, isolation: str) -> Consumer:
    return Consumer({"bootstrap.servers": bootstrap, "group.id": f"harness-mm2-{uuid.uuid4().hex[:8]}",
                     "enable.auto.commit": False, "isolation.level": isolation,
                     "auto.offset.reset": "earliest", "log_level": 0,
                     # the end of a partition said: a read_committed read whose log ends
                     # in a transaction marker (never delivered) knows it is done
                     "enable.partition.eof": True})


def end_offsets(bootstrap: str, topics: tuple[str, ...]) -> dict[tuple[str, int], tuple[int, int]]:
    """(topic, partition) -> (log start, high watermark), read from the cluster now."""
    c = _consumer(bootstrap, "read_uncommitted")
    try:
        out = {}
        for t in topics:
            for p in sorted(c.list_topics(t, timeout=10).topics[t].partitions):
                out[(t, p)] = c.get_watermark_offsets(TopicPartition(t, p), timeout=10, cached=False)
        return out
    finally:
        c.close()


def read_whole(bootstrap: str, topic: str, isolation: str,
               timeout_s: float = 20.0) -> list[tuple[int, int, int, bytes | None, bytes | None]]:
    """Every record of `topic` from its log start to its end offset now, as (partition,
    offset, timestamp ms, key, value); bounded by timeout_s (what was read by then)."""
    c = _consumer(bootstrap, isolation)
    out: list[tuple[int, int, int, bytes | None, bytes | None]] = []
    try:
        md = c.list_topics(topic, timeout=10).topics.get(topic)
        if md is None or md.error is not None:
            return out
        ends = {p: c.get_watermark_offsets(TopicPartition(topic, p), timeout=10, cached=False)
                for p in md.partitions}
        todo = {p for p, (low, high) in ends.items() if high > low}
        c.assign([TopicPartition(topic, p, ends[p][0]) for p in todo])
        deadline = time.monotonic() + timeout_s
        while todo and time.monotonic() < deadline:
            for m in c.consume(500, 0.5):
                if m.error() is not None and m.error().code() != KafkaError._PARTITION_EOF:
                    continue
                if m.error() is None:
                    out.append((m.partition(), m.offset(), m.timestamp()[1], m.key(), m.value()))
                if m.offset() >= ends[m.partition()][1] - 1:
                    todo.discard(m.partition())
        return out
    finally:
        c.close()


def committed_offsets(bootstrap: str, topic: str, isolation: str,
                      timeout_s: float = 20.0) -> dict[tuple[str, int], int]:
    """MM2's last committed source offset per (topic, partition): its offsets topic on
    the target read whole, the last record per key winning."""
    out: dict[tuple[str, int], int] = {}
    for _, _, _, key, value in read_whole(bootstrap, topic, isolation, timeout_s):
        apply_offset_record(out, key, value)
    return out


def apply_offset_record(committed: dict[tuple[str, int], int], key: bytes | None,
                        value: bytes | None) -> None:
    """One record of MM2's offsets topic applied to `committed` (a tombstone resets)."""
    parsed = parse_offset_record(key, value)
    if parsed is not None and parsed[1] is None:
        committed.pop(parsed[0], None)
    elif parsed is not None:
        committed[parsed[0]] = parsed[1]


def partition_rows(ends: dict[tuple[str, int], tuple[int, int]],
                   committed: dict[tuple[str, int], int]) -> list[dict]:
    """Per source partition: its end offset, MM2's committed offset, records behind,
    and whether it is caught up (pure: the wait's judgement, unit-tested)."""
    rows = []
    for (t, p), (low, high) in sorted(ends.items()):
        done = committed.get((t, p))
        behind = 0 if high <= low else (high - 1 - done if done is not None else high - low)
        rows.append({"topic": t, "partition": p, "end_offset": high, "committed": done,
                     "behind": max(0, behind), "caught_up": behind <= 0})
    return rows


class CatchUpWait:
    """Until every mirrored source partition is caught up, or timeout_s; `partitions`
    is what the last look saw."""

    def __init__(self, source_bootstrap: str, target_bootstrap: str, topics: tuple[str, ...],
                 offsets_topic: str, isolation: str, timeout_s: float):
        self.source, self.target, self.topics = source_bootstrap, target_bootstrap, topics
        self.offsets_topic, self.isolation, self.timeout_s = offsets_topic, isolation, timeout_s
        self.partitions: list[dict] = []
        self.waited_s = 0.0

    def run(self) -> bool:
        started = time.monotonic()
        ends = end_offsets(self.source, self.topics)      # fixed: the producers have stopped
        while True:
            committed = committed_offsets(self.target, self.offsets_topic, self.isolation)
            self.partitions = partition_rows(ends, committed)
            self.waited_s = round(time.monotonic() - started, 2)
            if all(r["caught_up"] for r in self.partitions) or self.waited_s >= self.timeout_s:
                return all(r["caught_up"] for r in self.partitions)
            time.sleep(WAIT_POLL_S)
