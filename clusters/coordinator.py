"""FindCoordinator: which broker coordinates a transactional id, a consumer group, or
a share-partition's state.

librdkafka's admin API (confluent-kafka 2.16) has no call that names a transaction's
coordinator, so the request is made here, on the wire: FindCoordinator v1 (Kafka
0.11 on; 4.0 removed only v0) for groups and transactional ids, one exchange with one
broker of the bootstrap list (through TLS and SASL when the cluster is secured:
clusters/kafka_wire.py). A broker that is paused, down or still loading the
coordinator's partition is not an answer: the next one is asked, and the whole list
again until the deadline.

A share-partition's share coordinator (KIP-932) has key type SHARE, which only v6
accepts (an older version gets INVALID_REQUEST), and the broker asks CLUSTER_ACTION
of the asker. v6 is flexible and batched: a compact array of keys, one answer (with
its own error) per key. Its key is `group:topicId:partition` (SharePartitionKey), the
topic id as Kafka prints a Uuid; the coordinator is the leader of partition
`Utils.abs(key.hashCode()) % n` of `__share_group_state` (ShareCoordinatorService
.partitionFor), which `share_state_partition` computes here too, as a cross-check and
for a cluster that refuses the request.

    find_coordinator("10.0.0.2:9092,10.0.0.3:9092", "run-1-p0", TRANSACTION)  # -> 3
    find_coordinator(bootstrap, share_key("g", "ASNFZ4mrze8P7cuph2VDIQ", 0), SHARE)
"""
from __future__ import annotations

import struct
import time
from dataclasses import dataclass

from clusters.kafka_wire import (
    FlexReader,
    WireSecurity,
    compact_string,
    connect,
    exchange,
    frame_v1,
    frame_v2,
    uvarint,
)
from clusters.metadata_probe import _Reader as Reader
from core.errors import HarnessError

GROUP, TRANSACTION, SHARE = 0, 1, 2     # the request's key_type
KEY_TYPES = {"group": GROUP, "transaction": TRANSACTION, "share": SHARE}
API_KEY, API_VERSION = 10, 1
SHARE_API_VERSION = 6                   # "Version 6 adds support for share groups"
SHARE_STATE_TOPIC = "__share_group_state"
# "not now": asked again (another broker, or the same one later)
RETRIABLE = {14: "COORDINATOR_LOAD_IN_PROGRESS", 15: "COORDINATOR_NOT_AVAILABLE",
             16: "NOT_COORDINATOR"}
ERROR_NAMES = {**RETRIABLE, 31: "CLUSTER_AUTHORIZATION_FAILED", 35: "UNSUPPORTED_VERSION",
               42: "INVALID_REQUEST"}
_INT_MIN = -2**31


class CoordinatorError(HarnessError):
    """No broker named the coordinator before the deadline (error_code None), or one
    refused for good (error_code: Kafka's error)."""

    def __init__(self, message: str, error_code: int | None = None):
        super().__init__(message)
        self.error_code = error_code


@dataclass(frozen=True)
class Coordinator:
    node_id: int
    host: str
    port: int


def encode_request(key: str, key_type: int, correlation_id: int) -> bytes:
    """FindCoordinator v1: header v1 (api key, version, correlation id, client id),
    then key (string) and key_type (int8); the whole prefixed by its size."""
    k = key.encode()
    return frame_v1(API_KEY, API_VERSION, struct.pack(">h", len(k)) + k + struct.pack(">b", key_type),
                    correlation_id)


def decode_response(payload: bytes, correlation_id: int) -> tuple[int, str | None, Coordinator]:
    """(error_code, error_message, coordinator) of a v1 response (without its size)."""
    r = Reader(payload)
    cid, _throttle, error = r.take(">i"), r.take(">i"), r.take(">h")
    if cid != correlation_id:
        raise CoordinatorError(f"FindCoordinator answer for request {cid}, expected {correlation_id}")
    message, node_id, host, port = r.string(), r.take(">i"), r.string(), r.take(">i")
    return error, message, Coordinator(node_id, host or "", port)


def encode_request_v6(keys: list[str], key_type: int, correlation_id: int) -> bytes:
    """FindCoordinator v6: header v2, then KeyType (int8), CoordinatorKeys (a compact
    array of compact strings) and an empty tagged-field section."""
    body = struct.pack(">b", key_type) + uvarint(len(keys) + 1) \
        + b"".join(compact_string(k) for k in keys) + b"\x00"
    return frame_v2(API_KEY, SHARE_API_VERSION, body, correlation_id)


def decode_response_v6(payload: bytes, correlation_id: int
                       ) -> list[tuple[str, int, str | None, Coordinator]]:
    """[(key, error_code, error_message, coordinator)] of a v6 response (without its
    size): header v1 (correlation id, tags), ThrottleTimeMs, Coordinators[], tags."""
    r = FlexReader(payload)
    r.response_start(correlation_id, "FindCoordinator", CoordinatorError)
    out = []
    for _ in range(max(0, r.count())):
        key, node_id, host, port = r.string() or "", r.take(">i"), r.string() or "", r.take(">i")
        error, message = r.take(">h"), r.string()
        r.skip_tags()
        out.append((key, error, message, Coordinator(node_id, host, port)))
    return out


def ask(address: str, key: str, key_type: int, timeout_s: float = 3.0,
        correlation_id: int = 1, security: WireSecurity | None = None
        ) -> tuple[int, str | None, Coordinator]:
    """One FindCoordinator exchange with one broker (host:port): v1, or v6 for SHARE."""
    host, _, port = address.rpartition(":")
    with connect(host, int(port), timeout_s, security) as sock:
        if key_type != SHARE:
            return decode_response(exchange(sock, encode_request(key, key_type, correlation_id)),
                                   correlation_id)
        answers = decode_response_v6(
            exchange(sock, encode_request_v6([key], key_type, correlation_id)), correlation_id)
    for answer_key, error, message, coordinator in answers:
        if answer_key == key:
            return error, message, coordinator
    raise CoordinatorError(f"FindCoordinator v6 answered {[a[0] for a in answers]}, not {key!r}")


def find_coordinator(bootstrap: str, key: str, key_type: int, timeout_s: float = 15.0,
                     attempt_s: float = 3.0, security: WireSecurity | None = None) -> Coordinator:
    """The coordinator of `key` (a transactional.id, a group id or a share key), asking
    each broker of `bootstrap` in turn until one answers, within `timeout_s`."""
    deadline = time.monotonic() + timeout_s
    last = "no broker asked"
    correlation = 0
    while True:
        for address in [a.strip() for a in bootstrap.split(",") if a.strip()]:
            correlation += 1
            try:
                error, message, coordinator = ask(address, key, key_type, attempt_s, correlation, security)
            except (OSError, struct.error, IndexError) as e:
                last = f"{address}: {type(e).__name__}: {e}"
                continue
            if error == 0:
                return coordinator
            last = f"{address}: error {ERROR_NAMES.get(error, error)}" + (f" ({message})" if message else "")
            if error not in RETRIABLE:
                raise CoordinatorError(f"FindCoordinator({key!r}) refused: {last}", error)
        if time.monotonic() >= deadline:
            raise CoordinatorError(f"no broker named the coordinator of {key!r} within "
                                   f"{timeout_s:g} s; last: {last}")
        time.sleep(0.25)


# -- ListTransactions: the transactional ids a broker coordinates ------------------------
# For a client that chooses its own transactional.id (Kafka Streams:
# <application.id>-<processId>-<thread>): the harness learns the ids from the brokers.
# ListTransactions (KIP-664, Kafka 3.0+) v0, flexible: each broker answers for the
# transactional ids whose coordinator it is.
LIST_TXN_API_KEY, LIST_TXN_VERSION = 66, 0


def encode_list_transactions(correlation_id: int) -> bytes:
    """ListTransactions v0: no state filter, no producer id filter, no tags."""
    return frame_v2(LIST_TXN_API_KEY, LIST_TXN_VERSION, b"\x01\x01\x00", correlation_id)


def decode_list_transactions(payload: bytes, correlation_id: int) -> tuple[int, list[tuple[str, int, str]]]:
    """(error_code, [(transactional_id, producer_id, state)]) of a v0 response: header v1,
    ThrottleTimeMs, ErrorCode, UnknownStateFilters[], TransactionStates[], tags."""
    r = FlexReader(payload)
    cid = r.take(">i")
    if cid != correlation_id:
        raise CoordinatorError(f"ListTransactions answer for request {cid}, expected {correlation_id}")
    r.skip_tags()
    r.take(">i")                                    # throttle time
    error = r.take(">h")
    for _ in range(max(0, r.count())):              # unknown state filters (we sent none)
        r.string()
    states = []
    for _ in range(max(0, r.count())):
        txn_id, producer_id, state = r.string() or "", r.take(">q"), r.string() or ""
        r.skip_tags()
        states.append((txn_id, producer_id, state))
    return error, states


def list_transactions(bootstrap: str, timeout_s: float = 3.0,
                      security: WireSecurity | None = None) -> tuple[list[str], list[str]]:
    """The transactional ids the brokers of `bootstrap` coordinate (each broker asked
    once), sorted, and the brokers that did not answer ("address: why")."""
    ids: set[str] = set()
    missing = []
    for n, address in enumerate(a.strip() for a in bootstrap.split(",") if a.strip()):
        host, _, port = address.rpartition(":")
        try:
            with connect(host, int(port), timeout_s, security) as sock:
                error, states = decode_list_transactions(
                    exchange(sock, encode_list_transactions(n + 1)), n + 1)
        except (OSError, struct.error, IndexError, CoordinatorError) as e:
            missing.append(f"{address}: {type(e).__name__}: {e}")
            continue
        if error:
            missing.append(f"{address}: error {ERROR_NAMES.get(error, error)}")
        ids.update(t for t, _pid, _state in states)
    return sorted(ids), missing


# -- where a share-partition's state lives, computed as the broker does -------------------

def share_key(group: str, topic_id: str, partition: int) -> str:
    """SharePartitionKey's text: `String.format("%s:%s:%d", groupId, topicId, partition)`,
    the topic id as Kafka prints a Uuid (URL-safe base64, no padding)."""
    return f"{group}:{topic_id}:{partition}"


def java_string_hash(s: str) -> int:
    """Java's String.hashCode: h = 31*h + c over the UTF-16 code units, as a signed int."""
    h = 0
    data = s.encode("utf-16-be")
    for i in range(0, len(data), 2):
        h = (31 * h + (data[i] << 8 | data[i + 1])) & 0xFFFFFFFF
    return h - 2**32 if h >= 2**31 else h


def java_abs(n: int) -> int:
    """Kafka's Utils.abs: Math.abs, except Integer.MIN_VALUE (whose Math.abs is itself,
    negative) gives 0."""
    return 0 if n == _INT_MIN else abs(n)


def share_state_partition(key: str, partitions: int) -> int:
    """The `__share_group_state` partition of a share key (ShareCoordinatorService
    .partitionFor): its leader is the share coordinator."""
    return java_abs(java_string_hash(key)) % partitions
