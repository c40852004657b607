"""The report page and JUnit file, from a summary (no Spark needed)."""
from __future__ import annotations

import base64
import re
import xml.etree.ElementTree as ET

from spark_reports.junit import junit_xml
from spark_reports.report_html import render_report
from verifiers.expectations import load_expectations
from verifiers.verdict import judge, unknown

T0 = 1_700_000_000_000_000


def _summary(verdict) -> dict:
    per_sec = [{"second": T0 // 1_000_000 + i, "sent": 100, "acked": 90 if i != 3 else 0,
                "consumed": 95, "ack_p50_ms": 3.0 if i != 3 else None, "ack_p99_ms": 9.0,
                "ack_max_ms": 20.0} for i in range(6)]
    return {
        "run_id": "r-<1>", "counts": {"sent": 600, "acked": 450, "failed": 0,
                                      "indeterminate": 0, "consumed": 570},
        "anomalies": {"lost": 2, "overwritten": 0, "duplicate": 0, "reordered": 0,
                      "unexpected": 0, "divergent": 0, "aborted_read": 0, "skipped": 0,
                      "redelivered": 1, "recovered": 0},
        "metrics": {
            "ack_latency_ms": {"p50": 3, "p99": 9, "p999": 15, "max": 20, "n": 450},
            "e2e_latency_ms": {"p50": 5, "p99": 12, "p999": 30, "max": 40, "n": 450},
            "unavailability": [{"topic": "t", "partition": 0, "start_us": T0 + 2_500_000,
                                "end_us": T0 + 4_000_000, "seconds": 1.5, "ended_by_ack": True}],
            "recovery": [{"fault_id": "f1", "name": "pause", "target": "kafka-1",
                          "start_us": T0 + 2_000_000, "end_us": T0 + 4_000_000, "healed": True,
                          "seconds": 2.0, "after_heal_s": 0.0, "unavailable_s": 1.5,
                          "partitions": {"t-0": {"seconds": 2.0, "after_heal_s": 0.0,
                                                 "unavailable_s": 1.5}},
                          "partitions_from": "leader/ISR changes observed",
                          "never_recovered": []}],
            "fault_windows": [{"fault_id": "f1", "name": "pause", "target": "kafka-1",
                               "start_us": T0 + 2_000_000, "end_us": T0 + 4_000_000,
                               "healed": True,
                               "ack_latency_ms": {"p50": 900, "p99": 1900, "p999": 1990,
                                                  "max": 2000, "n": 10}}],
            "throughput": {"seconds_active": 6, "sent_per_s_mean": 100.0,
                           "acked_per_s_mean": 75.0, "acked_per_s_max": 90},
            "per_second": per_sec, "run_start_us": T0, "run_end_us": T0 + 6_000_000,
            "consumer_lag": [{"group_id": "g0", "per_second": [
                {"second": T0 // 1_000_000 + i, "lag": 10 * i} for i in range(6)]}],
            "partitions": ["t-0", "t-1"]},
        "timeline": {"observations": [
            {"ts_us": T0 - 1000, "name": "leader", "topic": "t", "partition": 0, "leader": 1,
             "isr": [1, 2, 3]},
            {"ts_us": T0 + 2_100_000, "name": "leader", "topic": "t", "partition": 0,
             "leader": 2, "isr": [2, 3]}]},
        "config": {"facts": {"durable": True}, "fact_sources": {"durable": "test"},
                   "expectations_from": "defaults", "unavailability_threshold_s": 1.0},
        "verdict": verdict.to_dict(), "notes": ["a note & <b>not bold</b>"],
        "verify_seconds": 1.5, "generated_at": "now",
        "anomaly_explanations": {"lost": [
            {"topic": "t", "partition": 0, "leader": "kafka-1", "faults": ["f1"], "count": 14840,
             "first_ack_us": T0 + 2_100_000, "last_ack_us": T0 + 2_900_000}]},
    }


def test_page_has_banner_plots_tables_and_escapes():
    v = judge({"anomalies": {"lost": 2}, "counts": {}, "metrics": {}},
              load_expectations("- lost == 0\n", "e"), {}, {})
    samples = {"anomalies": {"lost": [{"record_id": "p0-1", "topic": "t", "partition": 0,
                                       "ack_ts_us": T0 + 2_500_000}]},
               "columns": {"lost": ["record_id", "topic", "partition", "ack_ts_us"]}}
    page = render_report(_summary(v), {"producer": {"acks": "all"}}, None, samples)
    assert "<div class='banner failed'><h1>FAILED: run r-&lt;1&gt;</h1><ul><li>lost: 2 &gt; 0" in page
    pngs = re.findall(r"data:image/png;base64,([A-Za-z0-9+/=]+)", page)
    assert len(pngs) == 4            # throughput, latency, consumer lag, leadership
    assert all(base64.b64decode(p)[:8] == b"\x89PNG\r\n\x1a\n" for p in pngs)
    assert "<td>p0-1</td>" in page                       # first rows of the lost kind
    assert "acks: all" in page                           # scenario.yaml shown
    assert "a note &amp; &lt;b&gt;not bold&lt;/b&gt;" in page
    assert "http" not in page.replace("http-equiv", "")   # nothing fetched: readable offline


def test_anomalies_are_said_in_words_with_readable_times():
    v = judge({"anomalies": {"lost": 2}, "counts": {}, "metrics": {}},
              load_expectations("- lost == 0\n", "e"), {}, {})
    samples = {"anomalies": {"lost": [{"record_id": "p0-1", "ack_ts_us": T0 + 2_500_000}]},
               "columns": {"lost": ["record_id", "ack_ts_us"]}}
    page = render_report(_summary(v), None, None, samples)
    assert ("14\u2009840 acknowledged records of t-0 were lost; all were acknowledged by kafka-1 "
            "while f1 (pause) was active.") in page
    # seconds since the start and wall clock; never the raw microsecond integer
    assert "<td>+2.500 s (22:13:22.500 UTC)</td>" in page
    assert str(T0 + 2_500_000) not in page and f"{T0 + 2_500_000:,}" not in page


def test_unknown_page_and_junit():
    v = unknown("malformed history:\n  history/consumed: table 'consumed' is missing")
    s = {"run_id": "r", "verdict": v.to_dict(), "config": {}, "verify_seconds": 0.1}
    page = render_report(s, None, None, {})
    assert "banner unknown" in page and "table &#x27;consumed&#x27; is missing" in page
    root = ET.fromstring(junit_xml("r", v, 0.1))
    assert root.get("errors") == "1"
    assert "is missing" in root.find("testcase/error").text


def test_junit_cases_per_expectation():
    v = judge({"anomalies": {"lost": 1, "duplicate": 0}, "counts": {}, "metrics": {}},
              load_expectations("- lost == 0\n- duplicate == 0\n- reordered == 0 when idempotent\n",
                                "e"), {"idempotent": None}, {"idempotent": "unknown"})
    root = ET.fromstring(junit_xml("r", v, 2.0))
    assert (root.get("tests"), root.get("failures"), root.get("skipped")) == ("3", "1", "1")
    cases = {c.get("name"): c for c in root.findall("testcase")}
    assert cases["lost == 0"].find("failure").get("message") == "lost: 1 > 0"
    assert cases["reordered == 0 when idempotent"].find("skipped") is not None
    assert list(cases["duplicate == 0"]) == []
