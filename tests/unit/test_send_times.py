"""A run whose producers recorded no send times (Kafka's VerifiableProducer writes
send_ts_us = ack_ts_us): its latency, unavailability and recovery are unknown, not 0,
in the summary, the verdict and the terminal's end table; a run with any other
producer is measured as before (families/records/send_times.py)."""
from __future__ import annotations

import json

from rich.console import Console

from families.records.send_times import (
    SEND_TIMES_UNKNOWN,
    unknown_in,
    why_unknown,
    without_send_times,
)
from harness.run.end_table import _head, recovery_rows
from spark_reports.summary import Summary
from verifiers.expectations import load_expectations
from verifiers.verdict import judge


def _start(target: str, **detail) -> dict:
    return {"ts_us": 1, "kind": "client", "name": "producer-start", "target": target,
            "detail": json.dumps(detail)}


def test_unknown_only_when_every_producer_that_started_reports_no_send_time():
    java = _start("j1", tool="VerifiableProducer", max_messages=100)
    assert why_unknown([java, _start("j2", tool="VerifiableProducer")]) == (
        "no producer in the run recorded send times (Kafka's VerifiableProducer reports "
        "none: j1, j2)")
    assert why_unknown([java, _start("p0", pid=7)]) is None             # librdkafka's
    assert why_unknown([java, _start("tx", tool="TxnProducer")]) is None  # ours, in Java
    assert why_unknown([]) is None        # no producer-start: a history from before it


DOC = {
    "ack_latency_ms": {"p50": 0.0, "p99": 0.0, "p999": 0.0, "max": 0.0, "n": 900},
    "e2e_latency_ms": {"p50": 2.0, "p99": 5.0, "p999": 6.0, "max": 7.0, "n": 900},
    "unavailability": [], "max_unavailability_s": 0.0, "max_recovery_s": 0.0,
    "recovery": [
        {"fault_id": "f1", "name": "kill", "seconds": 0.0, "after_heal_s": 0.0,
         "unavailable_s": 0.0, "windows": 0, "no_partition_unavailable": True,
         "controller_failover_s": 1.5, "partitions": {"t-0": {
             "seconds": 0.0, "after_heal_s": 0.0, "unavailable_s": 0.0}},
         "partitions_from": "written", "never_recovered": []},
        {"fault_id": "f2", "name": "pause", "inject_error": "FaultError: gone", "seconds": 0.0,
         "no_partition_unavailable": True, "partitions": {}}],
    "fault_windows": [{"fault_id": "f1", "acked_during": 12,
                       "ack_latency_ms": {"p50": 0.0, "n": 40}}],
    "per_second": [{"second": 5, "sent": 10, "acked": 10, "ack_p50_ms": 0.0,
                    "ack_p99_ms": 0.0, "ack_max_ms": 0.0}],
    "throughput": {"acked_per_s_mean": 10.0},
}
WHY = "no producer in the run recorded send times (Kafka's VerifiableProducer reports none: j1)"


def test_what_send_times_measure_is_null_and_says_why_the_rest_is_kept():
    doc = without_send_times(DOC, WHY)
    assert unknown_in(doc) == WHY and unknown_in(DOC) is None
    assert doc["ack_latency_ms"] == doc["e2e_latency_ms"] == {
        "p50": None, "p99": None, "p999": None, "max": None, "n": 0}
    assert (doc["max_unavailability_s"], doc["max_recovery_s"], doc["unavailability"]) == (None, None, [])
    kill, pause = doc["recovery"]
    assert (kill["seconds"], kill["unavailable_s"], kill["no_partition_unavailable"]) == (None, None, None)
    assert kill["partitions"] == {"t-0": {"seconds": None, "after_heal_s": None, "unavailable_s": None}}
    assert kill["controller_failover_s"] == 1.5                 # the observer's, not the producers'
    assert pause == DOC["recovery"][1]                          # not injected: says so, as it was
    assert doc["fault_windows"][0]["ack_latency_ms"]["p50"] is None
    assert doc["fault_windows"][0]["acked_during"] == 12
    assert doc["per_second"][0]["ack_p99_ms"] is None and doc["per_second"][0]["acked"] == 10
    assert doc["throughput"] == DOC["throughput"]


EXPECT = "- max_unavailability_s <= 30\n- max_recovery_s <= 60\n- ack_latency_ms.p99 < 500\n"


def test_an_unknown_unavailability_is_not_judged_and_a_known_zero_still_holds():
    unknown = judge({"anomalies": {}, "counts": {}, "metrics": without_send_times(DOC, WHY)},
                    load_expectations(EXPECT, "e"), {}, {})
    assert unknown.status == "passed" and not unknown.failures
    assert _mine(unknown) == [("not judged", None)] * 3
    assert f"max_unavailability_s <= 30: not judged, unknown: {WHY}" in unknown.not_judged
    known = judge({"anomalies": {}, "counts": {}, "metrics": DOC}, load_expectations(EXPECT, "e"), {}, {})
    assert _mine(known) == [("passed", 0.0)] * 3


def _mine(verdict) -> list[tuple]:
    """EXPECT's checks (the always-checked defaults aside)."""
    return [(c.status, c.actual) for c in verdict.checks if c.expectation.split()[0] in
            ("max_unavailability_s", "max_recovery_s", "ack_latency_ms.p99")]


def test_the_end_table_says_unknown_not_zero():
    metrics = without_send_times({**DOC, "isr": []}, WHY)
    v = judge({"anomalies": {}, "counts": {}, "metrics": metrics}, load_expectations(EXPECT, "e"), {}, {})
    summary = Summary(metrics=metrics)
    assert recovery_rows(summary)[0][2:5] == ["unknown"] * 3
    console = Console(record=True, width=400)
    console.print(_head(summary, v, "r"))
    text = console.export_text()
    assert f"max unavailability │ unknown ({WHY})" in text and "0.0 s" not in text
    # a run with send times: as before
    assert recovery_rows(Summary(metrics={**DOC, "isr": []}))[0][2] == "no partition unavailable"
    assert SEND_TIMES_UNKNOWN not in DOC
