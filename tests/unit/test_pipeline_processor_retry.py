"""The librdkafka pipeline processor calls a transactional call again when librdkafka
marks its error retriable (its documented "retry call to resume"), and only then: a
processor that died on an abort timed out while the coordinator moved lost a run's
inputs (benchmarks/evidence/pipeline-processors-die-on-quorum-loss). A watermark query
that failed while a leader was down is asked again; a fatal error is never called again
(the processor rebuilds its clients), and its rebuild is named for what it was."""
from __future__ import annotations

import threading

import pytest
from confluent_kafka import KafkaError, KafkaException

from workloads.pipeline_processor import (
    WATERMARK_RETRIABLE,
    call_again_if_retriable,
    rebuild_event_of,
    returned_within,
)


def _failing(*errors):
    calls = []

    def call():
        calls.append(1)
        if len(calls) <= len(errors):
            raise KafkaException(errors[len(calls) - 1])
        return "done"
    return call, calls


def test_a_retriable_error_is_called_again_until_it_succeeds():
    timeout = KafkaError(KafkaError._TIMED_OUT, "retry call to resume", retriable=True)
    call, calls = _failing(timeout, timeout)
    assert call_again_if_retriable(call, 10, pause_s=0) == "done" and len(calls) == 3


@pytest.mark.parametrize("error", [
    KafkaError(KafkaError.INVALID_TXN_STATE, "fatal", fatal=True, retriable=True),
    KafkaError(KafkaError.INVALID_TXN_STATE, "not retriable"),
])
def test_a_fatal_or_not_retriable_error_is_raised_at_once(error):
    call, calls = _failing(error, error)
    with pytest.raises(KafkaException):
        call_again_if_retriable(call, 10, pause_s=0)
    assert len(calls) == 1


def test_a_retriable_error_past_the_time_allowed_is_raised():
    timeout = KafkaError(KafkaError._TIMED_OUT, "retry call to resume", retriable=True)
    call, calls = _failing(*[timeout] * 50)
    with pytest.raises(KafkaException):
        call_again_if_retriable(call, 0.05, pause_s=0.02)
    assert 1 < len(calls) < 50


def test_an_error_named_in_also_is_called_again_after_a_refresh():
    """A watermark query while a partition's leader is down fails with
    _UNKNOWN_PARTITION, which librdkafka does not mark retriable (it ended a processor's
    restore: benchmarks/evidence/pipeline-processors-die-on-quorum-loss)."""
    unknown = KafkaError(KafkaError._UNKNOWN_PARTITION, "Failed to get watermark offsets")
    call, calls = _failing(unknown, unknown)
    refreshes = []
    got = call_again_if_retriable(call, 10, pause_s=0, also=WATERMARK_RETRIABLE,
                                  before_again=lambda: refreshes.append(len(calls)))
    assert got == "done" and len(calls) == 3 and refreshes == [1, 2]


def test_a_query_to_a_dropped_broker_handle_is_called_again():
    """_DESTROY_BROKER: a 3.9.2 processor's restore died on it when the output's leader
    was killed while the query was in flight."""
    dropped = KafkaError(KafkaError._DESTROY_BROKER, "Broker handle destroyed without termination")
    call, calls = _failing(dropped)
    assert call_again_if_retriable(call, 10, pause_s=0, also=WATERMARK_RETRIABLE,
                                   before_again=lambda: None) == "done" and len(calls) == 2


def test_an_error_not_named_in_also_is_raised_at_once():
    call, calls = _failing(KafkaError(KafkaError._UNKNOWN_PARTITION, "unknown"))
    with pytest.raises(KafkaException):
        call_again_if_retriable(call, 10, pause_s=0)
    assert len(calls) == 1


def test_a_fatal_error_is_raised_at_once_even_when_named_in_also():
    fatal = KafkaError(KafkaError._UNKNOWN_PARTITION, "fatal", fatal=True)
    call, calls = _failing(fatal, fatal)
    with pytest.raises(KafkaException):
        call_again_if_retriable(call, 10, pause_s=0, also=WATERMARK_RETRIABLE)
    assert len(calls) == 1


@pytest.mark.parametrize(("code", "event"), [
    (KafkaError._FENCED, "pipeline-fenced"),             # coordinator-kill seed 2
    (KafkaError.PRODUCER_FENCED, "pipeline-fenced"),
    (KafkaError.INVALID_PRODUCER_EPOCH, "pipeline-fenced"),
    (KafkaError.INVALID_TXN_STATE, "pipeline-rebuild"),  # coordinator-kill seed 1
])
def test_a_fatal_error_s_rebuild_is_named_fenced_only_for_a_fencing_error(code, event):
    assert rebuild_event_of(KafkaError(code, "x", fatal=True)) == event


def test_a_call_that_returns_in_time_gives_its_result_or_its_error():
    assert returned_within(lambda: "done", 5, "call") == "done"
    timeout = KafkaError(KafkaError._TIMED_OUT, "retry call to resume", retriable=True)
    call, _ = _failing(timeout)
    with pytest.raises(KafkaException) as raised:
        returned_within(call, 5, "call")
    assert raised.value.args[0] is timeout


def test_a_call_that_does_not_return_in_time_is_a_fatal_timeout_naming_it():
    """librdkafka's send_offsets_to_transaction blocked past its 30 s timeout while the
    group coordinator was down (librdkafka #5456): the processor must not wait on it."""
    release = threading.Event()
    with pytest.raises(KafkaException) as raised:
        returned_within(lambda: release.wait(30), 0.05, "send_offsets_to_transaction")
    release.set()
    err = raised.value.args[0]
    assert err.code() == KafkaError._TIMED_OUT and err.fatal()
    assert "send_offsets_to_transaction" in err.str()
    assert rebuild_event_of(err) == "pipeline-rebuild"
