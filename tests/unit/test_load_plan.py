"""Load that never came: each producing workload's plan (from the scenario model)
against what it sent (the history's produced table), judged by default
(load_shortfall == 0).

The case CI met: Kafka's Java transactional producer asked for 200 records/s for 20 s
sent its first record 16 s after it started, then one 5-record transaction about
every 0.6 s: 70 records, and the run passed."""
from __future__ import annotations

import numpy as np
import pytest

from core.errors import SpecError
from core.history import HistoryWriter
from core.timeline import Timeline
from harness.run.end_table import load_rows
from harness.scenario import parse_scenario
from harness.scenario.yamlsource import load_yaml
from spark_reports.load_plan import LoadPlan, measure, read_sends, summarize_load
from spark_reports.storage import RunLocation
from spark_reports.summary import Summary
from verifiers.expectations import load_expectations
from verifiers.verdict import judge

S = 1_000_000
T0 = 1_700_000_000_000_000
JAVA_TXN = LoadPlan("p0", "Java transactional producer", rate=200, duration_s=20,
                    restarts=True)


def _scenario(text: str):
    data, source = load_yaml(text, "s.yaml")
    return parse_scenario(data, source)


BASE = """
topics: [{name: t, partitions: 3}]
workload:
  duration_s: 60
  producers:
"""


def test_the_plan_is_rate_times_duration_capped_by_records():
    assert LoadPlan("p0", "producer", rate=200, duration_s=20).planned_records == 4000
    assert LoadPlan("p0", "producer", rate=200, duration_s=20, records=1000).planned_records == 1000
    assert LoadPlan("p0", "producer", records=500).planned_records == 500
    assert LoadPlan("p0", "producer", rate=100, records=500).planned_records == 500
    assert LoadPlan("p0", "producer", duration_s=60).planned_records is None    # unthrottled
    assert LoadPlan("p0", "producer", rate=100, duration_s=60, off_s=10).planned_records == 5000
    assert JAVA_TXN.words == "200 records/s for 20 s"


def test_incarnations_send_for_a_producer_that_may_restart_and_only_then():
    assert JAVA_TXN.sends_as("p0") and JAVA_TXN.sends_as("p0.1") and JAVA_TXN.sends_as("p0.12")
    assert not JAVA_TXN.sends_as("p01") and not JAVA_TXN.sends_as("p0.x")
    assert not LoadPlan("p0", "producer").sends_as("p0.1")


def test_the_model_lists_every_producing_workload_as_the_history_names_it():
    s = _scenario(BASE + """\
    - {name: p0, topic: t, rate: 500}
    - {name: tx, topic: t, rate: 100, transactions: {records_per_txn: 5},
       churn: {first_s: 18, every_s: 20, how: kill, down_s: 2}}
    - {name: jt, topic: t, rate: 200, client: java, on_fatal: restart,
       transactions: {records_per_txn: 5}}
    - {name: fast, topic: t}
    - {name: counted, topic: t, records: 5000}
  java_producers:
    - {prefix: 1, topic: t, max_messages: 15000, throughput: 1000}
    - {prefix: 2, topic: t, max_messages: 3000}
report: {min_load_fraction: 0.25}
""")
    plans = {p.workload: p for p in s.load_plans}
    assert list(plans) == ["p0", "tx", "jt", "fast", "counted", "j1", "j2"]
    assert plans["p0"].planned_records == 30_000 and not plans["p0"].restarts
    # churned at 18 s and 40 s (then too late: 58 s is within down_s + 2 s of the end)
    assert plans["tx"].off_s == 4.0 and plans["tx"].restarts
    assert plans["tx"].kind == "transactional producer"
    assert plans["jt"].kind == "Java transactional producer" and plans["jt"].restarts
    assert plans["fast"].planned_records is None and plans["fast"].duration_s == 60
    assert plans["counted"].planned_records == 5000
    assert plans["j1"].planned_records == 15_000 and plans["j1"].kind == "Java VerifiableProducer"
    assert plans["j2"].planned_records == 3000 and plans["j2"].rate is None
    assert {p.min_fraction for p in plans.values()} == {0.25}
    # stored runs get it the same way: the resolved document read back into the model
    again = _scenario(s.to_yaml())
    assert again.load_plans == s.load_plans


def test_a_bad_fraction_names_its_place():
    with pytest.raises(SpecError) as e:
        _scenario(BASE + "    - {name: p0, topic: t}\nreport: {min_load_fraction: 2}\n")
    assert "s.yaml" in str(e.value) and "report.min_load_fraction" in str(e.value)


def _sends(name: str, seconds) -> dict[str, np.ndarray]:
    return {name: np.array([T0 + int(s * S) for s in seconds], dtype=np.int64)}


def test_the_java_transactional_producer_of_ci_is_short():
    # first send 16 s after the start, then 5 records every 0.6 s: 70 records
    sends = _sends("p0", [16 + 0.6 * (i // 5) for i in range(70)])
    row = measure(JAVA_TXN, sends, T0)
    assert (row["planned"], row["sent"], row["short"]) == (4000, 70, True)
    assert row["fraction"] == pytest.approx(0.0175)
    assert row["start_delay_s"] == 16.0 and row["longest_gap_s"] == pytest.approx(0.6)


def test_a_producer_stalled_10_s_by_a_leader_kill_catches_up_and_is_not_short():
    # 200/s for 20 s; nothing between 5 s and 15 s (acks=all, the leader gone), then it
    # sends what it owes (it throttles against the time since it began)
    seconds = [i / 200 for i in range(1000)] + [15 + i / 1000 for i in range(2000)] + \
              [17 + i / 200 for i in range(600)]
    row = measure(LoadPlan("p0", "producer", rate=200, duration_s=20), _sends("p0", seconds), T0)
    assert row["sent"] == 3600 and not row["short"]
    assert row["longest_gap_s"] == pytest.approx(10.005)      # 4.995 s to 15 s
    # without the catch-up it would still have sent 75 % of its plan: not short either
    row = measure(LoadPlan("p0", "producer", rate=200, duration_s=20),
                  _sends("p0", [i / 200 for i in range(1000)] + [15 + i / 200 for i in range(1000)]), T0)
    assert row["fraction"] == 0.5 and not row["short"]


def test_incarnations_are_counted_together():
    sends = {**_sends("p0", [i / 100 for i in range(1000)]),
             **_sends("p0.1", [12 + i / 100 for i in range(800)]),
             **_sends("p01", [i / 100 for i in range(5000)])}
    row = measure(LoadPlan("p0", "producer", rate=100, duration_s=20, restarts=True), sends, T0)
    assert row["producers"] == ["p0", "p0.1"] and row["sent"] == 1800
    assert row["longest_gap_s"] == pytest.approx(2.01)


def test_an_unthrottled_workload_is_short_only_when_it_sent_nothing():
    plan = LoadPlan("p0", "producer", duration_s=60)
    assert not measure(plan, _sends("p0", [1, 2]), T0)["short"]
    nothing = measure(plan, {}, T0)
    assert nothing["short"] and nothing["start_delay_s"] is None and nothing["sent"] == 0


def _history(tmp_path, sends: dict[str, list[float]]) -> list[str]:
    w = HistoryWriter(tmp_path, "produced", "r1", writer_name="test")
    for name, seconds in sends.items():
        for seq, s in enumerate(seconds):
            w.append({"producer": name, "seq": seq, "record_id": f"{name}-{seq}", "topic": "t",
                      "partition": 0, "status": "acked", "send_ts_us": T0 + int(s * S),
                      "ack_ts_us": T0 + int(s * S) + 1000})
    w.close()
    return RunLocation.of(str(tmp_path)).list_parquet("history", "produced")


def test_sends_are_read_from_the_produced_files(tmp_path):
    files = _history(tmp_path, {"p1": [3, 1, 2], "p0": [0.5]})
    got = read_sends(RunLocation.of(str(tmp_path)), files)
    assert {k: (v - T0).tolist() for k, v in got.items()} == {"p0": [500_000],
                                                            "p1": [S, 2 * S, 3 * S]}
    assert read_sends(RunLocation.of(str(tmp_path)), []) == {}


def test_a_short_workload_fails_the_run_and_says_why(tmp_path):
    files = _history(tmp_path, {"p0": [16 + 0.6 * (i // 5) for i in range(70)],
                                "q": [i / 10 for i in range(200)]})
    tl = Timeline(phases=[(T0, "workloads-start")])
    summary = {"counts": {"workload_deaths": 0, "fault_errors": 0}, "anomalies": {},
               "problems": [{"kind": "commits", "at_us": None, "text": "…"}]}
    plans = (JAVA_TXN, LoadPlan("q", "producer", rate=10, duration_s=20))
    summarize_load(summary, plans, RunLocation.of(str(tmp_path)), files, tl)
    assert summary["counts"]["load_shortfall"] == 1
    said = ("p0 (Java transactional producer) sent 70 of 4,000 planned records (1.8 %; "
            "200 records/s for 20 s; below 50 %); first send 16.0 s after the workloads "
            "started, longest gap between sends 0.6 s")
    assert [p["text"] for p in summary["problems"]] == ["…", said]
    v = judge(summary, load_expectations("- lost == 0\n", "e"), {}, {})
    assert v.failures == (f"load_shortfall: 1 > 0 ({said})",)
    table = load_rows(Summary.from_dict(summary))
    assert [short for _, short in table] == [True, False]
    assert table[0][0][:5] == ["p0 (Java transactional producer)", "200 records/s for 20 s",
                               "4,000", "70", "1.8 %"]
    # a scenario that expects its load to fall short says so
    v = judge(summary, load_expectations("- load_shortfall <= 1\n", "e"), {}, {})
    assert v.status == "passed"


def test_without_plans_the_shortfall_is_not_judged_and_says_why(tmp_path):
    summary = {"counts": {"workload_deaths": 0, "fault_errors": 0}, "anomalies": {}}
    summarize_load(summary, None, RunLocation.of(str(tmp_path)), [], Timeline())
    assert "load_shortfall" not in summary["counts"] and not summary["load"]["judged"]
    v = judge(summary, load_expectations(None, "defaults"), {}, {})
    assert v.status == "passed"
    assert ("load_shortfall == 0: not judged, no load plan was given (verified without the "
            "run's scenario model)") in v.not_judged


def test_a_load_the_run_ended_after_the_faults_is_planned_to_its_end(tmp_path):
    # 100/s for 180 s, but the run ended the load at 60 s (end_after_faults_s): 6 000
    # planned, and a producer that sent 5 800 by then is not short; 2 000 is
    files = _history(tmp_path, {"p0": [i / 100 for i in range(5800)],
                                "q": [i / 100 for i in range(2000)]})
    tl = Timeline(phases=[(T0, "workloads-start"), (T0 + 60 * S, "load-cut")])
    summary = {"counts": {}, "anomalies": {}}
    plans = (LoadPlan("p0", "producer", rate=100, duration_s=180),
             LoadPlan("q", "producer", rate=100, duration_s=180))
    summarize_load(summary, plans, RunLocation.of(str(tmp_path)), files, tl)
    p0, q = summary["load"]["workloads"]
    assert (p0["planned"], p0["short"], q["planned"], q["short"]) == (6000, False, 6000, True)
    assert p0["plan"] == ("100 records/s for 180 s, ended at 60.0 s, after the faults "
                          "(end_after_faults_s)")
    # a cut after the duration changes nothing
    assert LoadPlan("p0", "producer", rate=100, duration_s=20, cut_to_s=30).planned_records == 2000
    assert LoadPlan("p0", "producer", rate=100, duration_s=20, cut_to_s=30).words == \
        "100 records/s for 20 s"


def test_end_after_faults_must_be_shorter_than_the_load_and_needs_faults():
    faults = "faults: {timeline: [{at: 5, fault: kill, target: {node: broker-1}}]}\n"
    s = _scenario(BASE.replace("duration_s: 60", "duration_s: 60\n  end_after_faults_s: 15")
                  + "    - {name: p0, topic: t}\n" + faults)
    assert s.workload.end_after_faults_s == 15
    assert _scenario(s.to_yaml()).workload.end_after_faults_s == 15     # stored runs read it
    for value, faults_text, said in (
            (60, faults, "not shorter than workload.duration_s"),
            (0, faults, "greater than 0"),
            (15, "", "the scenario has no faults to end after")):
        with pytest.raises(SpecError) as e:
            _scenario(BASE.replace("duration_s: 60", f"duration_s: 60\n  end_after_faults_s: {value}")
                      + "    - {name: p0, topic: t}\n" + faults_text)
        assert "s.yaml" in str(e.value) and "workload.end_after_faults_s" in str(e.value), e.value
        assert said in str(e.value), e.value
