"""MirrorMaker 2's checkpoints, read from the target and written as `commits` rows.

MM2's checkpoint connector reads each consumer group's committed offsets on the source
and translates them (through its offset syncs) to the mirrored topic's offsets on the
target, every emit.checkpoints.interval.seconds; each translation is one record of
`<source alias>.checkpoints.internal` on the target (Kafka's
org.apache.kafka.connect.mirror.Checkpoint, in Kafka's protocol types):
- key: group (STRING), topic (STRING: the target's name, `source.orders`), partition (INT32);
- value: version (INT16, 0), upstream offset (INT64: the group's committed offset on
  the source), downstream offset (INT64: the translated offset on the target),
  metadata (STRING).
A STRING is an INT16 length and that many UTF-8 bytes; every integer is big-endian.

The spec ("Mirrored topics") asks for a group's offset on the source and its
translated offset on the target as `commits` rows with `cluster`: each checkpoint
record is written as two rows, `cluster = 'source'` (the source topic, the upstream
offset) and `cluster = 'target'` (the target topic, the downstream offset), both with
`consumer = 'mm2-checkpoint:<partition>:<offset>'` (the checkpoint record's place in
its topic: what pairs the two) and `ts_us` the record's timestamp (MM2's clock: the
same host here).
"""
from __future__ import annotations

import struct
from dataclasses import dataclass

from families.mirror.section import SOURCE, TARGET

CHECKPOINT_CONSUMER = "mm2-checkpoint"


def checkpoints_topic() -> str:
    """Where MM2 writes its checkpoints of the source's groups, on the target."""
    return f"{SOURCE}.checkpoints.internal"


@dataclass(frozen=True)
class Checkpoint:
    group: str
    topic: str                  # the target's topic (`source.<topic>`)
    partition: int
    upstream: int               # the group's committed offset on the source
    downstream: int             # its translation on the target


class _Reader:
    def __init__(self, data: bytes):
        self.data, self.at = data, 0

    def take(self, fmt: str):
        (v,) = struct.unpack_from(fmt, self.data, self.at)
        self.at += struct.calcsize(fmt)
        return v

    def string(self) -> str:
        n = self.take(">h")
        if n < 0 or self.at + n > len(self.data):
            raise ValueError("string length out of range")
        s = self.data[self.at:self.at + n].decode()
        self.at += n
        return s


def parse_checkpoint(key: bytes | None, value: bytes | None) -> Checkpoint | None:
    """One record of the checkpoints topic; None for a tombstone, a version this
    parser does not know, or bytes that are not a checkpoint."""
    if not key or not value:
        return None
    try:
        k, v = _Reader(key), _Reader(value)
        group, topic, partition = k.string(), k.string(), k.take(">i")
        if v.take(">h") != 0:
            return None
        upstream, downstream = v.take(">q"), v.take(">q")
        return Checkpoint(group, topic, partition, upstream, downstream)
    except (struct.error, ValueError, UnicodeDecodeError):
        return None


def encode_checkpoint(c: Checkpoint, metadata: str = "") -> tuple[bytes, bytes]:
    """The record MM2 writes for `c` (the parser's inverse; for tests and tools)."""
    def s(x: str) -> bytes:
        b = x.encode()
        return struct.pack(">h", len(b)) + b
    key = s(c.group) + s(c.topic) + struct.pack(">i", c.partition)
    return key, struct.pack(">hqq", 0, c.upstream, c.downstream) + s(metadata)


def commit_rows(c: Checkpoint, source_topic: str, place: tuple[int, int],
                ts_us: int) -> list[dict]:
    """The two `commits` rows of one checkpoint record at `place` (partition, offset
    of the checkpoints topic): the source commit and its translation."""
    consumer = f"{CHECKPOINT_CONSUMER}:{place[0]}:{place[1]}"
    common = {"consumer": consumer, "group_id": c.group, "partition": c.partition,
              "ok": True, "error": None, "ts_us": ts_us}
    return [{**common, "cluster": SOURCE, "topic": source_topic, "offset": c.upstream},
            {**common, "cluster": TARGET, "topic": c.topic, "offset": c.downstream}]
