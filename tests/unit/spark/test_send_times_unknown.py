"""Whole verifies of a run whose only producer is Kafka's VerifiableProducer (its rows
have send_ts_us = ack_ts_us: it reports no send time), judged as `harness verify
RUN_DIR` judges a stored run: its latency, unavailability and recovery are unknown in
the summary, the expectation on unavailability is not judged, and the run still passes
on what it could judge. The same history from a producer that records send times has a
window of 4 s (its acks stop for 4 s while sends wait)."""
from __future__ import annotations

import json
from dataclasses import replace

import pytest
from histories import T0, History

from harness.run.judge import stored_judgement
from verifiers.verify import verify_run

pytestmark = pytest.mark.spark

S = 1_000_000
# Kafka's VerifiableProducer alone, 100 records/s for 10 s
SCENARIO = """\
workload: {duration_s: 10, java_producers: [{prefix: 1, topic: t, max_messages: 1000, throughput: 100}]}
expect: [max_unavailability_s <= 30, ack_latency_ms.p99 < 500]
name: java-producer-only
cluster: {mode: kraft-combined, version: "3.9", brokers: 3}
topics: [{name: t, partitions: 1, replication_factor: 3, configs: {min.insync.replicas: 2}}]
"""


def _write(tmp_path, java: bool) -> None:
    """1 000 records from 0 s, none acked between 3 s and 7 s (sent at 3 s, acked at
    7 s, when java: as the tool writes them, sent when acked)."""
    h = History(tmp_path)
    h.event("phase", "workloads-start", T0)
    h.event("client", "producer-start", T0, "j1",
            json.dumps({"tool": "VerifiableProducer", "max_messages": 1000} if java else {"pid": 1}))
    for seq in range(1000):
        sent = T0 + seq * S // 100
        acked = max(sent, T0 + 7 * S) if 3 * S <= sent - T0 < 7 * S else sent + 2000
        rid = h.send("t", "j1", seq, offset=seq, send_ts=acked if java else sent, ack_ts=acked)
        h.drain("t", 0, seq, rid)
    h.event("fault", "kill", T0 + 3 * S, "kafka-1",
            json.dumps({"fault_id": "kill-1", "label": "timeline[0] kill"}))
    h.event("heal", "kill", T0 + 6 * S, "kafka-1", json.dumps({"fault_id": "kill-1"}))
    h.close()
    (tmp_path / "scenario.yaml").write_text(SCENARIO)


def test_a_verifiable_producer_only_run_has_unknown_latency_and_unavailability(tmp_path, spark):
    result = _verify(tmp_path, spark, java=True)
    s, m = result.summary, result.summary["metrics"]
    assert m["send_times_unknown"] == ("no producer in the run recorded send times (Kafka's "
                                       "VerifiableProducer reports none: j1)")
    assert (m["max_unavailability_s"], m["max_recovery_s"], m["unavailability"]) == (None, None, [])
    assert m["ack_latency_ms"]["p99"] is None and m["recovery"][0]["seconds"] is None
    checks = {c["expectation"]: c for c in s["verdict"]["checks"]}
    assert checks["max_unavailability_s <= 30"]["status"] == "not judged"
    assert checks["max_unavailability_s <= 30"]["reason"].startswith(
        "max_unavailability_s <= 30: not judged, unknown: no producer in the run recorded send times")
    assert checks["ack_latency_ms.p99 < 500"]["status"] == "not judged"
    assert result.exit_code == 0 and s["counts"]["acked"] == 1000


def test_the_same_history_with_send_times_is_measured(tmp_path, spark):
    s = _verify(tmp_path, spark, java=False).summary
    m = s["metrics"]
    assert "send_times_unknown" not in m
    assert m["max_unavailability_s"] == pytest.approx(4.0, abs=0.02)
    checks = {c["expectation"]: c for c in s["verdict"]["checks"]}
    assert checks["max_unavailability_s <= 30"]["status"] == "passed"


def _verify(tmp_path, spark, java: bool):
    _write(tmp_path, java)
    return verify_run(str(tmp_path), replace(stored_judgement(str(tmp_path)), html=False),
                      spark=spark)
