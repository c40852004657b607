"""The librdkafka pipeline processor calls a transactional call again when librdkafka
marks its error retriable (its documented "retry call to resume"), and only then: a
processor that died on an abort timed out while the coordinator moved lost a run's
inputs (benchmarks/evidence/pipeline-processors-die-on-quorum-loss)."""
from __future__ import annotations

import pytest
from confluent_kafka import KafkaError, KafkaException

from workloads.pipeline_processor import call_again_if_retriable


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
