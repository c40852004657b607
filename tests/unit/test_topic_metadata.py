"""clusters.topic_metadata: Metadata v12 written and read byte by byte (topic ids as Kafka
prints them), and the compact-encoding helpers of clusters.kafka_wire."""
import socket
import struct

import pytest

from clusters import kafka_wire as kw
from clusters import topic_metadata as tm

# Kafka's Uuid.toString of these bytes (java.util.Base64 URL encoder, no padding, run here)
RAW_ID = bytes.fromhex("0123456789abcdef0fedcba987654321")
RAW_ID_URL = bytes.fromhex("fbffbf0000000000000000000000003e")


def test_uuid_text_is_url_safe_base64_without_padding():
    assert kw.uuid_text(RAW_ID) == "ASNFZ4mrze8P7cuph2VDIQ"
    assert kw.uuid_text(RAW_ID_URL) == "-_-_AAAAAAAAAAAAAAAAPg"


def test_unsigned_varints_and_compact_strings():
    assert [kw.uvarint(n) for n in (0, 1, 127, 128, 300)] == [
        b"\x00", b"\x01", b"\x7f", b"\x80\x01", b"\xac\x02"]
    assert kw.compact_string(None) == b"\x00" and kw.compact_string("ab") == b"\x03ab"
    r = kw.FlexReader(b"\xac\x02" + b"\x03ab" + b"\x00" + b"\x01" + b"\x03" + struct.pack(">ii", 4, 5))
    assert (r.uvarint(), r.string(), r.string(), r.count(), r.ints()) == (300, "ab", None, 0, (4, 5))


def test_request_v12_byte_for_byte():
    client = b"harness-observer"
    body = (struct.pack(">hhi", 3, 12, 9) + struct.pack(">h", len(client)) + client + b"\x00"
            + b"\x02"                                   # Topics: 1
            + bytes(16) + b"\x07orders" + b"\x00"       # TopicId zero (by name), Name, tags
            + b"\x00" + b"\x00"                         # no auto-creation, no authorized ops
            + b"\x00")                                  # tags
    assert tm.encode_request(["orders"], 9) == struct.pack(">i", len(body)) + body


def _partition(index: int, leader: int, replicas: list[int]) -> bytes:
    ints = bytes([len(replicas) + 1]) + b"".join(struct.pack(">i", r) for r in replicas)
    return (struct.pack(">hiii", 0, index, leader, 4) + ints + ints + b"\x01" + b"\x00")


def test_response_v12_gives_each_topics_id_and_leaders():
    payload = (struct.pack(">i", 9) + b"\x00" + struct.pack(">i", 0)
               + b"\x02" + struct.pack(">i", 1) + b"\x09" + b"10.0.0.1" + struct.pack(">i", 9092)
               + b"\x00" + b"\x00"                                  # broker: rack null, tags
               + b"\x04abc" + struct.pack(">i", 1)                  # cluster id, controller
               + b"\x03"                                            # 2 topics
               + struct.pack(">h", 0) + b"\x07orders" + RAW_ID + b"\x00"
               + b"\x03" + _partition(0, 1, [1, 2]) + _partition(1, -1, [2])
               + struct.pack(">i", -2**31) + b"\x00"
               + struct.pack(">h", 3) + b"\x05nope" + bytes(16) + b"\x00" + b"\x01"
               + struct.pack(">i", -2**31) + b"\x00"
               + b"\x00")
    got = tm.decode_response(payload, 9)
    assert got == {"orders": tm.TopicInfo("orders", "ASNFZ4mrze8P7cuph2VDIQ", 0, {0: 1, 1: None}),
                   "nope": tm.TopicInfo("nope", "AAAAAAAAAAAAAAAAAAAAAA", 3, {})}


def test_no_broker_answering_ends_at_the_deadline():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        dead = f"127.0.0.1:{s.getsockname()[1]}"
    with pytest.raises(tm.TopicMetadataError, match="within 0.5 s"):
        tm.describe_topics(dead, ["orders"], timeout_s=0.5)
