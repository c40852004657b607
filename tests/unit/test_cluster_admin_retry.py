"""The admin retry policy: which librdkafka errors are retried, and the deadline."""
import time

import pytest
from confluent_kafka import KafkaError, KafkaException

from clusters.admin_retry import AdminError, admin_retry, is_transient


def failing(codes, result="done"):
    """A request that raises these error codes in turn, then answers."""
    calls = []

    def request(budget):
        calls.append(budget)
        if len(calls) <= len(codes):
            code = codes[len(calls) - 1]
            if code == "timeout":
                raise TimeoutError()
            raise KafkaException(KafkaError(code))
        return result
    return request, calls


@pytest.mark.parametrize("code", [
    KafkaError._DESTROY_BROKER, KafkaError._TRANSPORT, KafkaError.NOT_CONTROLLER,
    KafkaError._TIMED_OUT, KafkaError.LEADER_NOT_AVAILABLE, KafkaError._ALL_BROKERS_DOWN,
    KafkaError.REQUEST_TIMED_OUT, KafkaError.BROKER_NOT_AVAILABLE, "timeout"])
def test_transient_errors_are_retried_until_the_request_succeeds(code):
    request, calls = failing([code, code])
    assert admin_retry("creating topic 't'", request, timeout=10) == "done"
    assert len(calls) == 3


def test_destroy_broker_is_transient_though_librdkafka_says_it_is_not():
    err = KafkaError(KafkaError._DESTROY_BROKER)
    assert not err.retriable() and is_transient(err)


@pytest.mark.parametrize("code", [KafkaError.INVALID_REPLICATION_FACTOR,
                                  KafkaError.POLICY_VIOLATION, KafkaError.INVALID_CONFIG,
                                  KafkaError.TOPIC_AUTHORIZATION_FAILED])
def test_fatal_errors_fail_at_once_naming_the_error(code):
    request, calls = failing([code])
    t0 = time.monotonic()
    with pytest.raises(AdminError) as e:
        admin_retry("creating topic 't'", request, timeout=30)
    assert len(calls) == 1 and time.monotonic() - t0 < 1
    assert str(e.value).startswith("creating topic 't' failed: " + KafkaError(code).name())


def test_a_caller_may_widen_what_is_transient():
    request, calls = failing([KafkaError.INVALID_REPLICATION_FACTOR])
    assert admin_retry("x", request, 10, transient=lambda e: True) == "done"
    assert len(calls) == 2


def test_retries_stop_at_the_deadline_with_the_last_error():
    request, calls = failing([KafkaError._TRANSPORT] * 1000)
    t0 = time.monotonic()
    with pytest.raises(AdminError, match=r"within 2 s; last error _TRANSPORT"):
        admin_retry("reading cluster metadata", request, timeout=2, attempt_s=0.5)
    assert 1.5 < time.monotonic() - t0 < 3.5 and len(calls) >= 3
    # No attempt is given more time than is left, nor more than attempt_s.
    assert all(0.5 <= b <= 2 for b in calls)
