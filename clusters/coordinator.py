"""FindCoordinator: which broker coordinates a transactional id or a consumer group.

librdkafka's admin API (confluent-kafka 2.16) has no call that names a transaction's
coordinator, so the request is made here, on the wire: FindCoordinator v1 (Kafka
0.11 on; 4.0 removed only v0), one exchange with one broker of the bootstrap list
(through TLS and SASL when the cluster is secured: clusters/kafka_wire.py). A broker
that is paused, down or still loading the coordinator's partition is not an answer:
the next one is asked, and the whole list again until the deadline.

    find_coordinator("10.0.0.2:9092,10.0.0.3:9092", "run-1-p0", TRANSACTION)  # -> 3
"""
from __future__ import annotations

import struct
import time
from dataclasses import dataclass

from clusters.kafka_wire import WireSecurity, connect, exchange, frame_v1
from clusters.metadata_probe import _Reader as Reader
from core.errors import HarnessError

GROUP, TRANSACTION = 0, 1               # the request's key_type
KEY_TYPES = {"group": GROUP, "transaction": TRANSACTION}
API_KEY, API_VERSION = 10, 1
# "not now": asked again (another broker, or the same one later)
RETRIABLE = {14: "COORDINATOR_LOAD_IN_PROGRESS", 15: "COORDINATOR_NOT_AVAILABLE",
             16: "NOT_COORDINATOR"}


class CoordinatorError(HarnessError):
    """No broker named the coordinator before the deadline, or one refused for good."""


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


def ask(address: str, key: str, key_type: int, timeout_s: float = 3.0,
        correlation_id: int = 1, security: WireSecurity | None = None
        ) -> tuple[int, str | None, Coordinator]:
    """One FindCoordinator exchange with one broker (host:port)."""
    host, _, port = address.rpartition(":")
    with connect(host, int(port), timeout_s, security) as sock:
        return decode_response(exchange(sock, encode_request(key, key_type, correlation_id)),
                               correlation_id)


def find_coordinator(bootstrap: str, key: str, key_type: int, timeout_s: float = 15.0,
                     attempt_s: float = 3.0, security: WireSecurity | None = None) -> Coordinator:
    """The coordinator of `key` (a transactional.id or a group id), asking each broker
    of `bootstrap` in turn until one answers, within `timeout_s`."""
    deadline = time.monotonic() + timeout_s
    last = "no broker asked"
    correlation = 0
    while True:
        for address in [a.strip() for a in bootstrap.split(",") if a.strip()]:
            correlation += 1
            try:
                error, message, coordinator = ask(address, key, key_type, attempt_s, correlation, security)
            except (OSError, struct.error) as e:
                last = f"{address}: {type(e).__name__}: {e}"
                continue
            if error == 0:
                return coordinator
            last = f"{address}: error {RETRIABLE.get(error, error)}" + (f" ({message})" if message else "")
            if error not in RETRIABLE:
                raise CoordinatorError(f"FindCoordinator({key!r}) refused: {last}")
        if time.monotonic() >= deadline:
            raise CoordinatorError(f"no broker named the coordinator of {key!r} within "
                                   f"{timeout_s:g} s; last: {last}")
        time.sleep(0.25)
