"""The report page and JUnit file, from a summary (no Spark needed)."""
from __future__ import annotations

import base64
import re
import xml.etree.ElementTree as ET

from spark_reports.report_html import render_report
from spark_reports.summary import Summary
from verifiers.expectations import load_expectations
from verifiers.junit import verdict_junit as junit_xml
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
            {"ts_us": T0 - 1000, "name": "isr", "topic": "t", "partition": 0, "leader": None,
             "isr": [1, 2, 3]},
            {"ts_us": T0 + 2_100_000, "name": "leader", "topic": "t", "partition": 0,
             "leader": 2, "isr": None, "fault_id": "f1"},
            {"ts_us": T0 + 2_150_000, "name": "isr", "topic": "t", "partition": 0,
             "leader": None, "isr": [2, 3], "fault_id": "f1"},
            {"ts_us": T0 + 5_000_000, "name": "isr", "topic": "t", "partition": 0,
             "leader": None, "isr": [1, 2, 3], "fault_id": "f1"}],
            "brokers": {"1": "kafka-1", "2": "kafka-2", "3": "kafka-3"}},
        "config": {"facts": {"durable": True}, "fact_sources": {"durable": "test"},
                   "expectations_from": "defaults", "unavailability_threshold_s": 1.0},
        "verdict": verdict.to_dict(), "notes": ["a note & <b>not bold</b>"],
        "verify_seconds": 1.5, "generated_at": "now",
        "anomaly_explanations": {"lost": [
            {"topic": "t", "partition": 0, "leader": 1, "elected_leader": 1, "fault_id": "f1",
             "faults": ["f1"], "count": 14840,
             "first_ack_us": T0 + 2_100_000, "last_ack_us": T0 + 2_900_000}]},
    }


def test_page_has_banner_plots_tables_and_escapes():
    v = judge({"anomalies": {"lost": 2}, "counts": {}, "metrics": {}},
              load_expectations("- lost == 0\n", "e"), {}, {})
    samples = {"anomalies": {"lost": [{"record_id": "p0-1", "topic": "t", "partition": 0,
                                       "ack_ts_us": T0 + 2_500_000}]},
               "columns": {"lost": ["record_id", "topic", "partition", "ack_ts_us"]}}
    page = render_report(Summary.from_dict(_summary(v)), {"producer": {"acks": "all"}}, None, samples)
    assert ("<div class='banner failed'><h1>FAILED: lost == 0 was violated: 2 lost on t-0 "
            "(14\u2009840)</h1><div>run r-&lt;1&gt;</div><ul><li>\u2717 lost == 0 was violated") in page
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
    page = render_report(Summary.from_dict(_summary(v)), None, None, samples)
    assert ("14\u2009840 acknowledged records of t-0 were lost; kafka-1 acknowledged them between "
            "+2.1 s and +2.9 s, while pause was active.") in page
    # seconds since the start and wall clock; never the raw microsecond integer
    assert "<td>+2.500 s (22:13:22.500 UTC)</td>" in page
    assert str(T0 + 2_500_000) not in page and f"{T0 + 2_500_000:,}" not in page


def test_unknown_page_and_junit():
    v = unknown("malformed history:\n  history/consumed: table 'consumed' is missing")
    s = {"run_id": "r", "verdict": v.to_dict(), "config": {}, "verify_seconds": 0.1}
    page = render_report(Summary.from_dict(s), None, None, {})
    assert "banner unknown" in page and "table &#x27;consumed&#x27; is missing" in page
    root = ET.fromstring(junit_xml("r", v, 0.1))
    assert root.get("errors") == "1"
    assert "is missing" in root.find("testcase/error").text


def test_junit_cases_per_expectation():
    v = judge({"anomalies": {"lost": 1, "duplicate": 0},
               "counts": {"workload_deaths": 0, "fault_errors": 0, "load_shortfall": 0},
               "metrics": {}},
              load_expectations("- lost == 0\n- duplicate == 0\n- reordered == 0 when idempotent\n",
                                "e"), {"idempotent": None}, {"idempotent": "unknown"})
    root = ET.fromstring(junit_xml("r", v, 2.0))
    # workload_deaths, fault_errors and load_shortfall == 0 are judged beside the three
    # (a run that did not do what it planned never passes)
    assert (root.get("tests"), root.get("failures"), root.get("skipped")) == ("6", "1", "1")
    cases = {c.get("name"): c for c in root.findall("testcase")}
    assert cases["lost == 0"].find("failure").get("message") == "lost: 1 > 0"
    assert cases["reordered == 0 when idempotent"].find("skipped") is not None
    assert list(cases["duplicate == 0"]) == []


def _deposed_summary(verdict) -> dict:
    s = _summary(verdict)
    s["anomalies"]["lost"] = 4841
    s["metrics"]["fault_windows"][0].update(
        label="timeline[1] partition", name="partition",
        description="kafka-1 cut off from every other node; clients still reach it")
    s["metrics"]["recovery"][0].update(label="timeline[1] partition", name="partition",
                                       description="kafka-1 cut off from every other node; "
                                                   "clients still reach it")
    s["anomalies_by_fault"] = {"f1": {"lost": 4841}}
    s["anomaly_explanations"] = {"lost": [
        {"topic": "t", "partition": 0, "leader": 1, "elected_leader": 2, "fault_id": "f1",
         "faults": ["f1"], "count": 4841,
         "first_ack_us": T0 + 2_200_000, "last_ack_us": T0 + 4_400_000}]}
    return s


def test_a_deposed_leaders_losses_name_it_the_election_it_missed_and_its_return():
    v = judge({"anomalies": {"lost": 4841}, "counts": {}, "metrics": {}},
              load_expectations("- lost > 0\n", "e"), {}, {})
    page = render_report(Summary.from_dict(_deposed_summary(v)), None, None, {})
    assert ("4\u2009841 acknowledged records of t-0 were lost. kafka-1 acknowledged them after "
            "timeline[1] partition began (+2.0 s: kafka-1 cut off from every other node; clients "
            "still reach it) and after the controller had elected kafka-2 (+2.1 s), between "
            "+2.2 s and +4.4 s; they were truncated when kafka-1 rejoined (+5.0 s).") in page


def test_the_banner_says_why_a_run_with_losses_passed_and_the_expected_kind_is_amber():
    v = judge({"anomalies": {"lost": 4841}, "counts": {}, "metrics": {}},
              load_expectations("- lost > 0\n", "e"), {}, {})
    page = render_report(Summary.from_dict(_deposed_summary(v)), None, None, {})
    assert "<h1>PASSED: lost &gt; 0 was expected: 4\u2009841 lost on t-0 (4\u2009841)</h1>" in page
    assert "<tr class='expected'><td>lost</td>" in page and "class='bad'" not in page


def test_each_fault_is_told_in_the_scenarios_words_with_what_the_cluster_did():
    v = judge({"anomalies": {"lost": 4841}, "counts": {}, "metrics": {}},
              load_expectations("- lost > 0\n", "e"), {}, {})
    page = render_report(Summary.from_dict(_deposed_summary(v)), None, None, {})
    story = page[page.index("<h2>What each fault did</h2>"):page.index("<h2>Anomalies</h2>")]
    assert "<h3>timeline[1] partition" in story
    rows = re.findall(r"<tr><td>([^<]*)</td><td>([^<]*)</td></tr>", story)
    assert rows[:5] == [("+2.0 s", "injected: kafka-1 cut off from every other node; clients "
                                    "still reach it"),
                        ("+2.1 s", "kafka-2 elected leader of t-0"),
                        ("+2.1 s", "ISR shrank on t-0"),
                        ("+4.0 s", "healed"),
                        ("+5.0 s", "ISR grew on t-0")]
    assert ("", "charged to it: lost 4\u2009841") in rows


def test_what_else_went_wrong_is_listed_and_says_so_when_nothing_did():
    v = judge({"anomalies": {}, "counts": {}, "metrics": {}}, load_expectations("[]", "e"), {}, {})
    s = _summary(v)
    s["problems"] = [{"kind": "workload-died", "at_us": T0 + 3_000_000,
                      "text": "producer p0 died (a fatal client error): KafkaException"}]
    page = render_report(Summary.from_dict(s), None, None, {})
    assert ("<h2>What else went wrong</h2><ul><li>+3.000 s (22:13:23.000 UTC): producer p0 died "
            "(a fatal client error): KafkaException</li></ul>") in page
    s["problems"] = []
    assert "Nothing: every workload ran to the end" in render_report(Summary.from_dict(s), None, None, {})


def test_a_leader_that_acknowledged_while_the_partition_had_no_leader_was_deposed_too():
    v = judge({"anomalies": {"lost": 4841}, "counts": {}, "metrics": {}},
              load_expectations("- lost > 0\n", "e"), {}, {})
    s = _deposed_summary(v)
    s["timeline"]["observations"].insert(1, {"ts_us": T0 + 2_050_000, "name": "leader",
                                             "topic": "t", "partition": 0, "leader": None,
                                             "fault_id": "f1"})
    s["anomaly_explanations"]["lost"][0].update(elected_leader=None, first_ack_us=T0 + 2_060_000,
                                                last_ack_us=T0 + 2_090_000)
    page = render_report(Summary.from_dict(s), None, None, {})
    assert ("kafka-1 acknowledged them after timeline[1] partition began (+2.0 s: kafka-1 cut off "
            "from every other node; clients still reach it) and after the controller had left t-0 "
            "without a leader (+2.0 s), between +2.1 s and +2.1 s") in page


def test_a_run_whose_producer_died_fails_and_the_banner_says_who_and_why():
    s = {"anomalies": {}, "counts": {"workload_deaths": 1}, "metrics": {}}
    v = judge(s, load_expectations(None, "defaults"), {}, {})
    assert v.status == "failed" and v.failures == ("workload_deaths: 1 > 0",)
    summary = _summary(v)
    summary["problems"] = [{"kind": "workload-died", "at_us": T0 + 3_000_000,
                            "text": "producer p0 died (a fatal client error): KafkaException: "
                                    "INVALID_TXN_STATE; its load stopped there"}]
    page = render_report(Summary.from_dict(summary), None, None, {})
    assert ("<h1>FAILED: workload_deaths == 0 was violated: producer p0 died (a fatal client "
            "error): KafkaException: INVALID_TXN_STATE; its load stopped there</h1>") in page


def test_each_checked_family_has_its_own_section_in_its_words():
    s = {"anomalies": {"lost": 0, "aborted_read": 0}, "counts": {"sent": 10, "acked": 9},
         "config": {"facts": {"transactional": False}}, "verdict": {"checks": []}}
    page = render_report(Summary.from_dict(s), None, None, {})
    records = page.index("Records: producers, consumer groups and the drain")
    txn = page.index("<h3>Transactions</h3>")
    assert records < txn
    assert "10 records sent: 9 acknowledged" in page[records:txn]
    assert "No producer of this run was transactional" in page[txn:]
    # a family none of whose kinds was checked gets no section
    assert "<h3>Transactions</h3>" not in render_report(Summary.from_dict({**s, "anomalies": {"lost": 0}}), None, None, {})


def test_a_compacted_topics_keys_are_said_one_by_one():
    """compaction_stale and compaction_resurrected are judged per key: the report says
    each of the first rows, the key, its last acknowledged write and what the log holds."""
    v = judge({"anomalies": {"compaction_stale": 2, "compaction_resurrected": 1}, "counts": {},
               "metrics": {}}, load_expectations("- compaction_stale == 0\n", "e"), {}, {})
    summary = _summary(v)
    summary["anomalies"].update(compaction_stale=2, compaction_resurrected=1)
    row = {"topic": "state", "partition": 1, "key": "k17", "offset": 5012, "version": 42,
           "tombstone": False, "ack_ts_us": T0 + 2_500_000, "fault_id": "f1", "faults_at_ack": ["f1"],
           "held_offset": 4999, "held_version": 41, "held_tombstone": False}
    gone = {**row, "key": "k18", "held_offset": None, "fault_id": "none", "faults_at_ack": []}
    back = {**row, "key": "k3", "tombstone": True, "age_ms": 95_000.0, "delete_retention_ms": 1000,
            "cleaned_to": 6000, "older_offset": 4001, "older_version": 40}
    samples = {"anomalies": {"compaction_stale": [row, gone], "compaction_resurrected": [back]}}
    page = render_report(Summary.from_dict(summary), None, None, samples)
    assert ("key k17 on state-1: last acknowledged v42 at +2.5 s (offset 5012, while pause was "
            "active); the compacted log still holds v41 at offset 4999.") in page
    assert ("key k18 on state-1: last acknowledged v42 at +2.5 s (offset 5012); the compacted "
            "log holds nothing of it.") in page
    assert ("key k3 on state-1: last acknowledged a tombstone (v42) at +2.5 s (offset 5012, while "
            "pause was active), 95.0 s before the drain read it (delete.retention.ms 1000), below "
            "the cleaner&#x27;s checkpoint 6000; the compacted log still holds v40 at offset 4001.") in page


def test_a_run_without_send_times_says_its_latency_and_unavailability_are_unknown():
    from families.records.send_times import without_send_times
    why = "no producer in the run recorded send times (Kafka's VerifiableProducer reports none: j1)"
    v = judge({"anomalies": {}, "counts": {}, "metrics": {}}, load_expectations("- lost == 0\n", "e"), {}, {})
    doc = _summary(v)
    doc["metrics"] = without_send_times(doc["metrics"], why)
    page = render_report(Summary.from_dict(doc), None, None, {})
    said = why.replace("'", "&#x27;")
    assert f"<h2>Latency</h2><p>Latency: unknown ({said}).</p>" in page
    assert f"Ack latency per second: unknown ({said})." in page
    assert f"not before a partition's first ack): unknown ({said})</p>" in page
    recovery = page[page.index("<h2>Faults and recovery</h2>"):]
    assert "<td>unknown</td><td>unknown</td><td>unknown</td>" in recovery
    story = page[page.index("<h2>What each fault did</h2>"):page.index("<h2>Anomalies</h2>")]
    assert f"recovery unknown: {said}" in story and "no partition unavailable" not in page
    assert len(re.findall(r"data:image/png;base64,", page)) == 3     # no latency plot
