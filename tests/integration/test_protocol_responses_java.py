"""The error responses the protocol proxy writes, read by Kafka's own Java client classes
(NetworkClient.parseResponse, as the client does on receipt) from the jars of our Kafka
images: every version each line's client speaks must parse, carry the error for every
partition or key asked for, and leave no byte unread. Needs Docker (the image's jars)
and javac; starts no cluster."""
from __future__ import annotations

import io
import json
import struct
import subprocess
import tarfile
import zipfile
from pathlib import Path

import pytest

from clusters.docker_env import docker_client
from clusters.images import ensure_images
from clusters.kafka_requests import (
    ADD_PARTITIONS_TO_TXN,
    API_KEYS,
    END_TXN,
    FETCH,
    FIND_COORDINATOR,
    FLEXIBLE_FROM,
    PRODUCE,
    SHARE_ACKNOWLEDGE,
    error_response,
    is_flexible,
    parse_request_header,
)
from clusters.kafka_wire import compact_string, uvarint

SOURCE = Path(__file__).parents[1] / "data" / "java" / "ResponseCheck.java"


def _string(s: str, flexible: bool) -> bytes:
    return compact_string(s) if flexible else struct.pack(">h", len(s)) + s.encode()


def _count(n: int, flexible: bool) -> bytes:
    return uvarint(n + 1) if flexible else struct.pack(">i", n)


def _frame(api: int, version: int, body: bytes, correlation: int = 42) -> bytes:
    flexible = is_flexible(api, version)
    head = struct.pack(">hhi", api, version, correlation) + struct.pack(">h", 5) + b"check"
    return head + (b"\x00" if flexible else b"") + body


def _produce(version: int) -> bytes:
    flex, tags = version >= 9, (b"\x00" if version >= 9 else b"")
    body = _string("txn", flex) if version >= 3 else b""
    body += struct.pack(">hi", -1, 30000) + _count(2, flex)
    for name, partitions in (("orders", (0, 2)), ("audit", (5,))):
        body += bytes(range(16)) if version >= 13 else _string(name, flex)
        body += _count(len(partitions), flex)
        for p in partitions:
            body += struct.pack(">i", p) + _count(3, flex) + b"abc" + tags
        body += tags
    return _frame(PRODUCE, version, body + tags)


def _find_coordinator(version: int) -> bytes:
    flex = version >= 3
    if version >= 4:
        body = b"\x00" + uvarint(3) + compact_string("g1") + compact_string("g2")
    else:
        body = _string("g1", flex) + (b"\x00" if version >= 1 else b"")
    return _frame(FIND_COORDINATOR, version, body + (b"\x00" if flex else b""))


def _end_txn(version: int) -> bytes:
    flex = version >= 3
    body = _string("txn", flex) + struct.pack(">qhb", 7, 1, 1) + (b"\x00" if flex else b"")
    return _frame(END_TXN, version, body)


def _add_partitions(version: int) -> bytes:
    flex, tags = version >= 3, (b"\x00" if version >= 3 else b"")
    topics = _count(2, flex)
    for name, partitions in (("orders", (0, 2)), ("audit", (5,))):
        topics += _string(name, flex) + _count(len(partitions), flex)
        topics += b"".join(struct.pack(">i", p) for p in partitions) + tags
    one = _string("txn", flex) + struct.pack(">qh", 7, 1)
    if version < 4:
        return _frame(ADD_PARTITIONS_TO_TXN, version, one + topics + tags)
    return _frame(ADD_PARTITIONS_TO_TXN, version, _count(1, flex) + one + b"\x00" + topics
                  + tags + tags)


def _fetch(version: int) -> bytes:
    flex, tags = version >= 12, (b"\x00" if version >= 12 else b"")
    body = struct.pack(">i", -1) if version <= 14 else b""          # replica_id
    body += struct.pack(">ii", 500, 1) + (struct.pack(">i", 1 << 20) if version >= 3 else b"")
    body += (b"\x01" if version >= 4 else b"") + (struct.pack(">ii", 9, 3) if version >= 7 else b"")
    body += _count(2, flex)
    for name, partitions in (("orders", (0, 2)), ("audit", (5,))):
        body += bytes(range(16)) if version >= 13 else _string(name, flex)
        body += _count(len(partitions), flex)
        for p in partitions:
            body += struct.pack(">i", p) + (struct.pack(">i", 4) if version >= 9 else b"")
            body += struct.pack(">q", 100) + (struct.pack(">i", 3) if version >= 12 else b"")
            body += (struct.pack(">q", 0) if version >= 5 else b"") + struct.pack(">i", 1 << 20)
            body += tags
        body += tags
    if version >= 7:
        body += _count(0, flex)                                     # forgotten topics
    if version >= 11:
        body += _string("", flex)                                   # rack id
    return _frame(FETCH, version, body + tags)


def _share_acknowledge(version: int) -> bytes:
    body = compact_string("g1") + compact_string("m1") + struct.pack(">i", 2)
    body += (b"\x00" if version >= 2 else b"") + uvarint(3)
    for topic_id, partitions in ((bytes(range(16)), (0, 2)), (bytes(range(16, 32)), (5,))):
        body += topic_id + uvarint(len(partitions) + 1)
        for p in partitions:
            # one batch: offsets 10-12, accept, release, reject
            body += struct.pack(">i", p) + uvarint(2) + struct.pack(">qq", 10, 12)
            body += uvarint(4) + bytes([1, 2, 3]) + b"\x00" + b"\x00"
        body += b"\x00"
    return _frame(SHARE_ACKNOWLEDGE, version, body + b"\x00")


# (request frame, error code, how many entries carry it)
CASES = ([(_produce(v), 6, 3) for v in range(14)]
         + [(_find_coordinator(v), 16, 2 if v >= 4 else 1) for v in range(7)]
         + [(_end_txn(v), 51, 1) for v in range(6)]
         + [(_add_partitions(v), 51, 3 if v < 4 else 4) for v in range(6)]
         + [(_fetch(v), 74, 3) for v in range(19)]
         + [(_share_acknowledge(v), 121, 3) for v in range(3)])
# responses whose top-level error the Java classes count beside the partitions' (NONE)
TOP_LEVEL_NONE = {FETCH, SHARE_ACKNOWLEDGE}
NAMES = {6: "NOT_LEADER_OR_FOLLOWER", 16: "NOT_COORDINATOR", 51: "CONCURRENT_TRANSACTIONS",
         74: "FENCED_LEADER_EPOCH", 121: "INVALID_RECORD_STATE"}


def _libs(image: str, into: Path) -> Path:
    c = docker_client().containers.create(image, entrypoint=["true"])
    try:
        stream, _ = c.get_archive("/opt/kafka/libs")
        with tarfile.open(fileobj=io.BytesIO(b"".join(stream))) as tar:
            tar.extractall(into, filter="data")
    finally:
        c.remove(force=True)
    return into / "libs"


@pytest.mark.parametrize("version", ["3.9", "4.3"])
def test_api_names_and_flexible_versions_match_kafkas_specs(tmp_path, version):
    """Header parsing rests on two tables: each API's name and its first flexible version;
    both must be what the message specs in that line's kafka-clients jar say."""
    tags = ensure_images([version])
    libs = _libs(next(t for n, t in tags.items() if n.startswith("kafka-")), tmp_path)
    jar = next(libs.glob("kafka-clients-*.jar"))
    with zipfile.ZipFile(jar) as z:
        specs = [json.loads("\n".join(line for line in z.read(n).decode().splitlines()
                                      if not line.strip().startswith("//")))
                 for n in z.namelist()
                 if n.startswith("common/message/") and n.endswith("Request.json")]
    requests = [s for s in specs if s.get("type") == "request" and s["validVersions"] != "none"]
    assert len(requests) > 60
    for spec in requests:
        key, flexible = spec["apiKey"], spec.get("flexibleVersions", "none")
        assert API_KEYS[spec["name"].removesuffix("Request")] == key, spec["name"]
        assert FLEXIBLE_FROM.get(key) == (None if flexible == "none" else int(flexible[:-1])), \
            spec["name"]


@pytest.mark.parametrize("version,parsed_count", [("3.9", 49), ("4.3", 47)])
def test_error_responses_parse_in_kafkas_java_client(tmp_path, version, parsed_count):
    tags = ensure_images([version])
    image = next(tag for name, tag in tags.items() if name.startswith("kafka-"))
    libs = _libs(image, tmp_path)
    subprocess.run(["javac", "--release", "11", "-cp", f"{libs}/*", "-d", str(tmp_path / "cls"),
                    str(SOURCE)], check=True, capture_output=True)
    lines = []
    for frame, code, _ in CASES:
        header = parse_request_header(frame)
        response = error_response(frame, header, code)
        lines.append(f"{header.api_key} {header.version} 42 {response[4:].hex()}")
    out = subprocess.run(["java", "-cp", f"{tmp_path / 'cls'}:{libs}/*", "ResponseCheck"],
                         input="\n".join(lines) + "\n", capture_output=True, text=True,
                         timeout=120, check=True).stdout.splitlines()
    assert len(out) == len(CASES), out
    parsed = 0
    for line, (frame, code, entries) in zip(out, CASES, strict=True):
        if line.endswith("unsupported"):          # a version this line's client does not speak
            continue
        none = "NONE=1, " if parse_request_header(frame).api_key in TOP_LEVEL_NONE else ""
        assert line.split(" ", 2)[2] == f"{{{none}{NAMES[code]}={entries}}}", line
        parsed += 1
    assert parsed == parsed_count, out   # 3.9: Produce v0-11, Fetch v0-17, ShareAcknowledge v0;
    # 4.3: Produce v3-13, EndTxn v5, Fetch v4-18, ShareAcknowledge v1-2; AddPartitionsToTxn v0-5 in both
