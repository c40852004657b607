"""Topic ids and partition leaders, as one broker tells them (Metadata v12 on the wire).

A share-partition's coordinator is found by a key holding the topic's id (KIP-932's
SharePartitionKey: `group:topicId:partition`), which neither the harness's clusters
nor confluent-kafka's `list_topics` give. Metadata v10 and later carry it; v12 is
the version asked here (flexible; served from Kafka 3.1 through 4.x, so by every
line that has share groups). It goes over the same connection code as FindCoordinator
(clusters/kafka_wire.py: TLS, SASL SCRAM), so it works the same way on a harness
cluster and on an external one, and one request also answers how many partitions
`__share_group_state` has and who leads them (the local cross-check's inputs).

    describe_topics("10.0.0.2:9092", ["orders", "__share_group_state"])
    # -> {"orders": TopicInfo("orders", "ASNFZ4mrze8P7cuph2VDIQ", 0, {0: 1, 1: 2, 2: 3}), …}
"""
from __future__ import annotations

import struct
import time
from dataclasses import dataclass, field

from clusters.kafka_wire import (
    FlexReader,
    WireSecurity,
    compact_string,
    connect,
    exchange,
    frame_v2,
    uvarint,
)
from core.errors import HarnessError

METADATA, VERSION = 3, 12
NO_TOPIC_ID = bytes(16)
UNKNOWN_TOPIC_OR_PARTITION = 3


class TopicMetadataError(HarnessError):
    """No broker answered the Metadata request before the deadline."""


@dataclass(frozen=True)
class TopicInfo:
    name: str
    topic_id: str                  # Kafka's Uuid text (URL-safe base64, no padding)
    error: int                     # 0, or Kafka's error for this topic (3: no such topic)
    leaders: dict[int, int | None] = field(default_factory=dict)   # partition -> broker id


def encode_request(topics: list[str], correlation: int = 1) -> bytes:
    """Metadata v12: Topics[] {TopicId (zero: by name), Name, tags},
    AllowAutoTopicCreation false, IncludeTopicAuthorizedOperations false, tags."""
    body = uvarint(len(topics) + 1) + b"".join(
        NO_TOPIC_ID + compact_string(t) + b"\x00" for t in topics)
    body += b"\x00\x00" + b"\x00"
    return frame_v2(METADATA, VERSION, body, correlation)


def _partitions(r: FlexReader) -> dict[int, int | None]:
    leaders: dict[int, int | None] = {}
    for _ in range(max(0, r.count())):
        r.take(">h")                                   # partition error
        index, leader = r.take(">i"), r.take(">i")
        r.take(">i")                                   # leader epoch
        r.ints(), r.ints(), r.ints()                   # replicas, ISR, offline replicas
        r.skip_tags()
        leaders[index] = leader if leader >= 0 else None
    return leaders


def decode_response(payload: bytes, correlation: int = 1) -> dict[str, TopicInfo]:
    """Each topic of a v12 response (without its size), by name."""
    r = FlexReader(payload)
    r.response_start(correlation, "Metadata")
    for _ in range(max(0, r.count())):                 # brokers
        r.take(">i"), r.string(), r.take(">i"), r.string()
        r.skip_tags()
    r.string()                                         # cluster id
    r.take(">i")                                       # controller id
    out = {}
    for _ in range(max(0, r.count())):
        error, name, topic_id, _internal = r.take(">h"), r.string() or "", r.uuid(), r.take(">?")
        leaders = _partitions(r)
        r.take(">i")                                   # topic authorized operations
        r.skip_tags()
        out[name] = TopicInfo(name, topic_id, error, leaders)
    return out


def ask(address: str, topics: list[str], timeout_s: float = 3.0,
        security: WireSecurity | None = None, correlation: int = 1) -> dict[str, TopicInfo]:
    host, _, port = address.rpartition(":")
    with connect(host, int(port), timeout_s, security) as sock:
        return decode_response(exchange(sock, encode_request(topics, correlation)), correlation)


def describe_topics(bootstrap: str, topics: list[str], timeout_s: float = 15.0,
                    attempt_s: float = 3.0, security: WireSecurity | None = None
                    ) -> dict[str, TopicInfo]:
    """`topics` as the first broker of `bootstrap` that answers tells them (a paused or
    cut-off broker is skipped; the list is asked again until `timeout_s`)."""
    deadline = time.monotonic() + timeout_s
    last, correlation = "no broker asked", 0
    while True:
        for address in [a.strip() for a in bootstrap.split(",") if a.strip()]:
            correlation += 1
            try:
                return ask(address, topics, attempt_s, security, correlation)
            except (OSError, ValueError, struct.error, IndexError) as e:
                last = f"{address}: {type(e).__name__}: {e}"
        if time.monotonic() >= deadline:
            raise TopicMetadataError(f"no broker answered a Metadata request for {topics} "
                                     f"within {timeout_s:g} s; last: {last}")
        time.sleep(0.25)
