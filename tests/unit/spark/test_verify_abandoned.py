"""A verify whose Spark Connect operation the server abandoned
(INVALID_HANDLE.OPERATION_ABANDONED: seen at load ~200, the client slow to fetch) is asked
again once, from the same history, and says so; its summary is the one a verify without
the error writes. Any other error is not asked again, and a second abandonment is the
error it is. The abandonment is raised by a stand-in for the pipeline's Spark part on its
first call (it cannot be made to happen on purpose); the verifies themselves are real."""
from __future__ import annotations

import json

import pytest
from histories import History

import spark_reports.pipeline as pipeline
from verifiers.verify import verify_run

pytestmark = pytest.mark.spark

MESSAGE = ("[INVALID_HANDLE.OPERATION_ABANDONED] The handle 0f3c is invalid. Operation was "
           "considered abandoned because of inactivity and removed.")


def _history(run_dir) -> None:
    h = History(run_dir)
    for seq in range(20):
        rid = h.send("t", "p0", seq, offset=seq)
        h.consume("t", 0, seq, rid)
        h.drain("t", 0, seq, rid)
    h.send("t", "p0", 20, offset=20)                  # acked, never read: lost
    h.close()


def _failing(monkeypatch, times: int, error: Exception) -> list[int]:
    calls = []
    real = pipeline._reconcile

    def reconcile(*args, **kwargs):
        calls.append(1)
        if len(calls) <= times:
            args[4]["counts"]["half_done"] = 1        # what a failed attempt may leave behind
            raise error
        return real(*args, **kwargs)
    monkeypatch.setattr(pipeline, "_reconcile", reconcile)
    return calls


def test_an_abandoned_operation_is_asked_again_and_gives_the_same_summary(tmp_path, spark, monkeypatch, capsys):
    from pyspark.errors.exceptions.connect import SparkConnectGrpcException
    plain, retried = tmp_path / "plain", tmp_path / "retried"
    for d in (plain, retried):
        _history(d)
    expected = verify_run(str(plain), spark=spark).summary
    calls = _failing(monkeypatch, 1, SparkConnectGrpcException(MESSAGE))
    got = verify_run(str(retried), spark=spark).summary
    assert len(calls) == 2
    assert "abandoned one of this verify's operations" in capsys.readouterr().out
    assert got["counts"] == expected["counts"] and "half_done" not in got["counts"]
    assert got["anomalies"] == expected["anomalies"] and got["anomalies"]["lost"] == 1
    assert got["verdict"] == expected["verdict"]
    assert json.loads((retried / "report" / "summary.json").read_text())["anomalies"]["lost"] == 1


def test_another_error_or_a_second_abandonment_is_not_asked_again(tmp_path, spark, monkeypatch):
    from pyspark.errors.exceptions.connect import SparkConnectGrpcException
    _history(tmp_path)
    calls = _failing(monkeypatch, 1, SparkConnectGrpcException("[INTERNAL_ERROR] something else"))
    with pytest.raises(SparkConnectGrpcException, match="INTERNAL_ERROR"):
        verify_run(str(tmp_path), spark=spark)
    assert len(calls) == 1
    calls = _failing(monkeypatch, 5, RuntimeError("verify failed") )
    with pytest.raises(RuntimeError):
        verify_run(str(tmp_path), spark=spark)
    assert len(calls) == 1
    abandoned = RuntimeError("wrapped")
    abandoned.__cause__ = SparkConnectGrpcException(MESSAGE)
    calls = _failing(monkeypatch, 5, abandoned)
    with pytest.raises(RuntimeError, match="wrapped"):
        verify_run(str(tmp_path), spark=spark)
    assert len(calls) == pipeline.ABANDONED_TRIES
