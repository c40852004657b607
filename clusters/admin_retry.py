"""Retry one Kafka admin request within a deadline.

A freshly started or faulted cluster answers admin requests with errors that
mean "not now": the controller moved (NOT_CONTROLLER), a broker is down or
unreachable (_TRANSPORT, _ALL_BROKERS_DOWN), a request timed out, or
librdkafka dropped the connection a request was on when it replaced its
bootstrap broker handle with the one metadata named (_DESTROY_BROKER, which
librdkafka reports as not retriable). Those are retried until the deadline;
anything else (POLICY_VIOLATION, INVALID_CONFIG …) fails at once.
"""
from __future__ import annotations

import logging
import time
from collections.abc import Callable
from typing import TypeVar

from confluent_kafka import KafkaError, KafkaException

from core.errors import HarnessError

T = TypeVar("T")
log = logging.getLogger(__name__)

TRANSIENT_CODES = frozenset({
    KafkaError._DESTROY_BROKER, KafkaError._TRANSPORT, KafkaError._TIMED_OUT,
    KafkaError._TIMED_OUT_QUEUE, KafkaError._ALL_BROKERS_DOWN, KafkaError._RESOLVE,
    KafkaError._WAIT_COORD, KafkaError._NODE_UPDATE, KafkaError._UNKNOWN_BROKER,
    KafkaError._INTR, KafkaError._RETRY, KafkaError._WAIT_CACHE,
    KafkaError.NOT_CONTROLLER, KafkaError.REQUEST_TIMED_OUT, KafkaError.LEADER_NOT_AVAILABLE,
    KafkaError.BROKER_NOT_AVAILABLE, KafkaError.NETWORK_EXCEPTION,
    KafkaError.NOT_LEADER_FOR_PARTITION, KafkaError.COORDINATOR_NOT_AVAILABLE,
    KafkaError.NOT_COORDINATOR, KafkaError.COORDINATOR_LOAD_IN_PROGRESS,
    KafkaError.NOT_ENOUGH_REPLICAS, KafkaError.KAFKA_STORAGE_ERROR,
    KafkaError.THROTTLING_QUOTA_EXCEEDED,
})


class AdminError(HarnessError):
    """An admin request failed for good, or kept failing until its deadline."""


def is_transient(err: KafkaError) -> bool:
    return err.retriable() or err.code() in TRANSIENT_CODES


def describe(err: KafkaError | None) -> str:
    if err is None:
        return "no answer (timed out waiting for the request)"
    return f"{err.name()}: {err.str()}"


def _error_of(exc: BaseException) -> KafkaError | None:
    arg = exc.args[0] if exc.args else None
    return arg if isinstance(arg, KafkaError) else None


def admin_retry(what: str, request: Callable[[float], T], timeout: float, *,
                transient: Callable[[KafkaError], bool] = is_transient,
                attempt_s: float = 30.0) -> T:
    """Return `request(budget_s)`, which sends one admin request and waits at most
    `budget_s` for its answer; retry transient errors and our own timeouts until
    `timeout` seconds have passed. Raises AdminError naming `what` and the error."""
    deadline = time.monotonic() + timeout
    backoff = 0.1
    while True:
        budget = max(0.5, min(attempt_s, deadline - time.monotonic()))
        try:
            return request(budget)
        except (KafkaException, TimeoutError) as e:
            err = _error_of(e)
            if isinstance(e, KafkaException) and (err is None or not transient(err)):
                raise AdminError(f"{what} failed: {describe(err) if err else e}") from None
            if time.monotonic() + backoff >= deadline:
                raise AdminError(f"{what} did not succeed within {timeout:.0f} s; "
                                 f"last error {describe(err)}") from None
            log.info("%s: retrying after %s", what, describe(err))
        time.sleep(backoff)
        backoff = min(1.0, backoff * 2)
