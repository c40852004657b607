"""Each broker's own answer to "who leads each partition", with its leader epoch.

A client library asks whichever broker it likes, and a leader cut off from the
quorum while clients still reach it keeps answering "I lead" (the deposed leader's
view): an observer that asks through such a client can miss an election for as long
as the cut lasts. So the observer asks every broker itself, one plain Metadata
request each (API 3, version 7: the first with each partition's leader epoch, still
served by Kafka 4), and keeps for each partition the answer with the highest leader
epoch: the controller's latest word, which the brokers it reached have and the
deposed one does not.

Over our own listeners, PLAINTEXT or secured (clusters/kafka_wire.py speaks TLS and
SASL SCRAM); external clusters are read through the Admin API.
"""
from __future__ import annotations

import struct
from dataclasses import dataclass

from clusters.kafka_wire import WireSecurity, connect, exchange

METADATA, VERSION = 3, 7


@dataclass(frozen=True)
class BrokerView:
    controller: int | None              # the controller this broker knows (ZooKeeper mode)
    partitions: list["PartitionView"]


@dataclass(frozen=True)
class PartitionView:
    topic: str
    partition: int
    leader: int | None
    leader_epoch: int
    replicas: tuple[int, ...]
    isr: tuple[int, ...]


class _Reader:
    def __init__(self, data: bytes):
        self.data, self.at = data, 0

    def take(self, fmt: str):
        v = struct.unpack_from(fmt, self.data, self.at)
        self.at += struct.calcsize(fmt)
        return v[0]

    def string(self) -> str | None:
        n = self.take(">h")
        if n < 0:
            return None
        s = self.data[self.at:self.at + n].decode()
        self.at += n
        return s

    def ints(self) -> tuple[int, ...]:
        return tuple(self.take(">i") for _ in range(self.take(">i")))


def _request(topics: list[str] | None, correlation: int = 1) -> bytes:
    client = b"harness-observer"
    body = struct.pack(">hhih", METADATA, VERSION, correlation, len(client)) + client
    if topics is None:
        body += struct.pack(">i", -1)
    else:
        body += struct.pack(">i", len(topics))
        for t in topics:
            body += struct.pack(">h", len(t.encode())) + t.encode()
    body += struct.pack(">b", 0)                 # allow_auto_topic_creation: no
    return struct.pack(">i", len(body)) + body


def _parse(data: bytes) -> BrokerView:
    r = _Reader(data)
    r.take(">i")                                 # correlation id
    r.take(">i")                                 # throttle time
    for _ in range(r.take(">i")):                # brokers
        r.take(">i"), r.string(), r.take(">i"), r.string()
    r.string()                                   # cluster id
    controller = r.take(">i")
    out = []
    for _ in range(r.take(">i")):
        error, name, _internal = r.take(">h"), r.string(), r.take(">b")
        for _ in range(r.take(">i")):
            perr, index, leader, epoch = r.take(">h"), r.take(">i"), r.take(">i"), r.take(">i")
            replicas, isr, _offline = r.ints(), r.ints(), r.ints()
            if error == 0 and perr in (0, 5):    # 5: LEADER_NOT_AVAILABLE (offline)
                out.append(PartitionView(name, index, leader if leader >= 0 else None, epoch,
                                         replicas, isr))
    return BrokerView(controller if controller >= 0 else None, out)


def broker_view(host: str, port: int, topics: list[str] | None,
                timeout: float = 1.0, security: WireSecurity | None = None) -> BrokerView:
    """One broker's metadata for `topics` (None: all), as that broker sees it."""
    with connect(host, port, timeout, security) as sock:
        return _parse(exchange(sock, _request(topics)))


def elected(views: list[list[PartitionView]]) -> list[PartitionView]:
    """Per partition, the answer with the highest leader epoch among the brokers'; of
    several with that epoch, the most common (an ISR change reaches the brokers one
    after the other without a new epoch)."""
    answers: dict[tuple[str, int], list[PartitionView]] = {}
    for view in views:
        for p in view:
            answers.setdefault((p.topic, p.partition), []).append(p)
    out = []
    for key in sorted(answers):
        top = max(p.leader_epoch for p in answers[key])
        newest = [p for p in answers[key] if p.leader_epoch == top]
        out.append(max(newest, key=newest.count))
    return out
