"""Request headers and the error responses of clusters/kafka_requests.py, on bytes laid
out as Kafka's message specs say (header v1 / v2, KIP-482 compact forms)."""
from __future__ import annotations

import struct

import pytest

from clusters.kafka_requests import (
    API_NAMES,
    END_TXN,
    FIND_COORDINATOR,
    FLEXIBLE_FROM,
    PRODUCE,
    can_encode_error,
    error_response,
    expects_response,
    parse_produce,
    parse_request_header,
)
from clusters.kafka_wire import compact_string, uvarint


def string(s: str | None) -> bytes:
    if s is None:
        return struct.pack(">h", -1)
    return struct.pack(">h", len(s)) + s.encode()


def header(api: int, version: int, corr: int, client: str | None, tags: bytes = b"\x00") -> bytes:
    flexible = api in FLEXIBLE_FROM and version >= FLEXIBLE_FROM[api]
    return struct.pack(">hhi", api, version, corr) + string(client) + (tags if flexible else b"")


def versions_around_flex(api: int) -> list[int]:
    first = FLEXIBLE_FROM.get(api)
    return [0, 1] if first is None else sorted({0, max(0, first - 1), first, first + 1})


@pytest.mark.parametrize("api", sorted(API_NAMES))
def test_header_of_every_api_flexible_or_not(api):
    for version in versions_around_flex(api):
        if api == 7 and version == 0:
            continue                                    # header v0: below
        body = b"BODY"
        frame = header(api, version, 1234567, "rdkafka-producer") + body
        h = parse_request_header(frame)
        assert (h.api_key, h.version, h.correlation_id, h.client_id) == \
            (api, version, 1234567, "rdkafka-producer")
        assert h.api == API_NAMES[api]
        assert frame[h.body_at:] == body, (api, version)


def test_flexible_header_skips_tagged_fields_and_reads_a_null_client_id():
    tags = uvarint(2) + uvarint(0) + uvarint(3) + b"abc" + uvarint(7) + uvarint(1) + b"z"
    frame = header(PRODUCE, 9, -5, None, tags=tags) + b"rest"
    h = parse_request_header(frame)
    assert h.client_id is None and h.correlation_id == -5 and h.flexible
    assert frame[h.body_at:] == b"rest"


def test_controlled_shutdown_v0_has_no_client_id():
    frame = struct.pack(">hhi", 7, 0, 9) + b"\x00\x00\x00\x01"
    h = parse_request_header(frame)
    assert h.client_id is None and h.body_at == 8


def test_truncated_client_id_is_refused():
    frame = struct.pack(">hhi", 0, 7, 1) + struct.pack(">h", 40) + b"short"
    with pytest.raises(ValueError):
        parse_request_header(frame)


# -- Produce ---------------------------------------------------------------------------

def produce_request(version: int, acks: int = -1, topics=(("t", (0, 2)),),
                    topic_id: bytes = bytes(range(16))) -> bytes:
    flexible = version >= 9
    records = b"R" * 12
    out = header(PRODUCE, version, 77, "cid")
    if version >= 3:
        out += compact_string("txn-1") if flexible else string("txn-1")
    out += struct.pack(">hi", acks, 30000)
    count = (lambda n: uvarint(n + 1)) if flexible else (lambda n: struct.pack(">i", n))
    out += count(len(topics))
    for name, partitions in topics:
        if version >= 13:
            out += topic_id
        else:
            out += compact_string(name) if flexible else string(name)
        out += count(len(partitions))
        for p in partitions:
            out += struct.pack(">i", p)
            out += (uvarint(len(records) + 1) if flexible else struct.pack(">i", len(records)))
            out += records + (b"\x00" if flexible else b"")
        out += b"\x00" if flexible else b""
    return out + (b"\x00" if flexible else b"")


class Read:
    """A reader written from ProduceResponse.json, independent of the encoder."""

    def __init__(self, data: bytes, flexible: bool):
        self.d, self.at, self.flex = data, 0, flexible

    def fmt(self, f: str):
        v = struct.unpack_from(f, self.d, self.at)[0]
        self.at += struct.calcsize(f)
        return v

    def uv(self) -> int:
        value = shift = 0
        while True:
            b = self.d[self.at]
            self.at += 1
            value |= (b & 0x7F) << shift
            if not b & 0x80:
                return value
            shift += 7

    def n(self) -> int:
        return self.uv() - 1 if self.flex else self.fmt(">i")

    def s(self):
        n = self.uv() - 1 if self.flex else self.fmt(">h")
        if n < 0:
            return None
        v = self.d[self.at:self.at + n].decode()
        self.at += n
        return v

    def tags(self):
        if self.flex:
            assert self.uv() == 0


def read_produce_response(frame: bytes, version: int) -> dict:
    size = struct.unpack_from(">i", frame)[0]
    assert size == len(frame) - 4
    r = Read(frame[4:], version >= 9)
    out = {"correlation": r.fmt(">i"), "topics": []}
    r.tags()                                              # response header v1
    for _ in range(r.n()):
        topic = r.d[r.at:r.at + 16] if version >= 13 else None
        if version >= 13:
            r.at += 16
        else:
            topic = r.s()
        parts = []
        for _ in range(r.n()):
            index, error, base = r.fmt(">i"), r.fmt(">h"), r.fmt(">q")
            if version >= 2:
                assert r.fmt(">q") == -1
            if version >= 5:
                assert r.fmt(">q") == -1
            if version >= 8:
                assert r.n() == 0 and r.s() is None
            r.tags()
            parts.append((index, error, base))
        r.tags()
        out["topics"].append((topic, parts))
    if version >= 1:
        out["throttle"] = r.fmt(">i")
    r.tags()
    assert r.at == len(r.d), "trailing bytes"
    return out


@pytest.mark.parametrize("version", range(0, 14))
def test_produce_error_response_every_version(version):
    frame = produce_request(version, topics=(("orders", (0, 2)), ("audit", (5,))))
    h = parse_request_header(frame)
    request = parse_produce(frame, h)
    assert request.acks == -1 and [t.partitions for t in request.topics] == [(0, 2), (5,)]
    assert request.transactional_id == ("txn-1" if version >= 3 else None)
    got = read_produce_response(error_response(frame, h, 6), version)
    assert got["correlation"] == 77
    if version >= 13:
        assert [t for t, _ in got["topics"]] == [bytes(range(16))] * 2
    else:
        assert [t for t, _ in got["topics"]] == ["orders", "audit"]
    assert [p for _, ps in got["topics"] for p in ps] == [(0, 6, -1), (2, 6, -1), (5, 6, -1)]


def test_produce_with_acks_0_expects_no_response():
    frame = produce_request(7, acks=0)
    assert not expects_response(frame, parse_request_header(frame))
    frame = produce_request(7, acks=1)
    assert expects_response(frame, parse_request_header(frame))


# -- FindCoordinator, EndTxn ------------------------------------------------------------

def test_find_coordinator_v3_error():
    frame = header(FIND_COORDINATOR, 3, 8, "c") + compact_string("grp") + b"\x00" + b"\x00"
    h = parse_request_header(frame)
    body = error_response(frame, h, 15)[4:]
    # correlation, header tags, throttle, error, message (null), node, host "", port, tags
    assert body == struct.pack(">i", 8) + b"\x00" + struct.pack(">ih", 0, 15) + b"\x00" + \
        struct.pack(">i", -1) + b"\x01" + struct.pack(">i", -1) + b"\x00"


def test_find_coordinator_v4_error_names_each_key():
    keys = uvarint(3) + compact_string("g1") + compact_string("g2")
    frame = header(FIND_COORDINATOR, 4, 8, "c") + b"\x00" + keys + b"\x00"
    h = parse_request_header(frame)
    body = error_response(frame, h, 16)[4:]
    entry = lambda k: compact_string(k) + struct.pack(">i", -1) + b"\x01" + \
        struct.pack(">ih", -1, 16) + b"\x00" + b"\x00"  # noqa: E731
    assert body == struct.pack(">i", 8) + b"\x00" + struct.pack(">i", 0) + uvarint(3) + \
        entry("g1") + entry("g2") + b"\x00"


@pytest.mark.parametrize("version", range(0, 6))
def test_end_txn_error(version):
    frame = header(END_TXN, version, 3, "c") + b"ignored"
    body = error_response(frame, parse_request_header(frame), 51)[4:]
    flexible = version >= 3
    want = struct.pack(">i", 3) + (b"\x00" if flexible else b"") + struct.pack(">ih", 0, 51)
    if version >= 5:
        want += struct.pack(">qh", -1, -1)
    assert body == want + (b"\x00" if flexible else b"")


def test_what_cannot_be_encoded_is_refused():
    assert not can_encode_error(2) and not can_encode_error(PRODUCE, 14)
    assert not can_encode_error(1, 19) and can_encode_error(79, 2)    # Fetch, ShareAcknowledge
    frame = header(2, 4, 1, "c")
    with pytest.raises(ValueError, match="ListOffsets v4"):
        error_response(frame, parse_request_header(frame), 6)


def record_batch(count: int, payload: bytes = b"r" * 20) -> bytes:
    """A magic-2 batch: its 61-byte header (Kafka's DefaultRecordBatch layout), then bytes."""
    after_length = struct.pack(">ibihiqqqhii", 0, 2, 0, 0, count - 1, 0, 0, 7, 0, 0, count)
    return struct.pack(">qi", 100, len(after_length) + len(payload)) + after_length + payload


@pytest.mark.parametrize("version", [3, 9, 13])
def test_produce_counts_the_records_of_every_batch(version):
    flexible = version >= 9
    batches = record_batch(4) + record_batch(3)
    frame = header(PRODUCE, version, 1, "c") + (compact_string(None) if flexible else string(None))
    frame += struct.pack(">hi", -1, 1000) + (uvarint(2) if flexible else struct.pack(">i", 1))
    frame += bytes(16) if version >= 13 else (compact_string("t") if flexible else string("t"))
    frame += (uvarint(2) if flexible else struct.pack(">i", 1)) + struct.pack(">i", 0)
    frame += (uvarint(len(batches) + 1) if flexible else struct.pack(">i", len(batches))) + batches
    frame += b"\x00\x00\x00" if flexible else b""
    request = parse_produce(frame, parse_request_header(frame))
    assert request.records == 7 and request.topics[0].partitions == (0,)


def test_add_partitions_to_txn_v3_error_on_every_partition():
    topics = uvarint(2) + compact_string("t") + uvarint(3) + struct.pack(">ii", 0, 4) + b"\x00"
    frame = header(24, 3, 5, "c") + compact_string("txn") + struct.pack(">qh", 7, 1) + topics + \
        b"\x00"
    body = error_response(frame, parse_request_header(frame), 51)[4:]
    partition = lambda i: struct.pack(">ih", i, 51) + b"\x00"  # noqa: E731
    assert body == struct.pack(">i", 5) + b"\x00" + struct.pack(">i", 0) + uvarint(2) + \
        compact_string("t") + uvarint(3) + partition(0) + partition(4) + b"\x00" + b"\x00"
