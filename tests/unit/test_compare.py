"""harness compare without a cluster: --vary parsing and validation, the differences
called (with and without repeats), and the outputs written from synthetic run dirs
(a summary.json and a produced history per run, as the runner leaves them)."""
from __future__ import annotations

import json
import math
from pathlib import Path
from xml.etree import ElementTree as ET

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from core.errors import SpecError
from harness.batch.compare import Axis, aggregate, differences, grid, parse_vary, plan, run_row
from harness.batch.compare_plot import per_second
from harness.batch.compare_report import write_outputs
from harness.cli import main
from spark_reports.summary import Summary

T0 = 1_800_000_000_000_000      # µs; the synthetic runs' first send


def test_parse_vary_and_grid():
    axes = parse_vary(["producer.acks=1,all", "cluster.brokers=3, 5"])
    assert axes == [Axis("producer.acks", ("1", "all")), Axis("cluster.brokers", ("3", "5"))]
    assert grid(axes) == [("producer.acks=1", "cluster.brokers=3"), ("producer.acks=1", "cluster.brokers=5"),
                          ("producer.acks=all", "cluster.brokers=3"), ("producer.acks=all", "cluster.brokers=5")]


@pytest.mark.parametrize("texts, words", [
    ([], "--vary: missing"),
    (["producer.acks"], "no '='"),
    (["producer.acks=1"], "two or more distinct"),
    (["producer.acks=1,1"], "two or more distinct"),
    (["producer.acks=1,all", "producer.acks=0,1"], "given twice"),
])
def test_parse_vary_refuses(texts, words):
    with pytest.raises(SpecError, match=words):
        parse_vary(texts)


def test_plan_same_seed_per_variant_and_repeat_seeds():
    runs = plan("leader-isolation", parse_vary(["producer.acks=1,all"]), repeat=2, seed=11)
    assert [(p.label, p.repeat, p.scenario.seed) for p in runs] == [
        ("producer.acks=1", 0, 11), ("producer.acks=1", 1, 12),
        ("producer.acks=all", 0, 11), ("producer.acks=all", 1, 12)]
    assert [p.scenario.workload.producers[0].acks for p in runs] == ["1", "1", "all", "all"]
    # the same fault timeline in every variant
    assert len({p.scenario.faults.model_dump_json() for p in runs}) == 1


def test_plan_names_unknown_key_with_closest():
    with pytest.raises(SpecError) as e:
        plan("leader-isolation", parse_vary(["producer.ackz=1,all"]), repeat=1)
    assert e.value.field == "--vary producer.ackz" and "did you mean 'acks'" in str(e.value)


def test_plan_names_the_vary_of_a_bad_combination():
    with pytest.raises(SpecError, match=r"--vary cluster.brokers=1: .*replication_factor"):
        plan("leader-isolation", parse_vary(["cluster.brokers=1,3"]), repeat=1)


def test_plan_names_the_grid_cell_that_clashes():
    # each value is valid with some other; acks=1 with idempotence is not
    with pytest.raises(SpecError, match=r"--vary producer.acks=1 producer.enable_idempotence=true: .*needs acks='all'"):
        plan("leader-isolation", parse_vary(["producer.acks=1,all", "producer.enable_idempotence=true,false"]), 1)
    runs = plan("leader-isolation", parse_vary(["producer.enable_idempotence=true,false"]), 1,
                base=("producer.acks=all",))
    assert [p.scenario.workload.producers[0].enable_idempotence for p in runs] == [True, False]


@pytest.mark.parametrize("argv, words", [
    (["compare", "leader-isolation", "--vary", "producer.ackz=1,all"], "did you mean 'acks'"),
    (["compare", "leader-isolation", "--vary", "producer.acks=1,al"], "--vary producer.acks=al"),
    (["compare", "no-such-scenario", "--vary", "producer.acks=1,all"], "no-such-scenario"),
    (["compare", "leader-isolation", "--vary", "producer.acks=1,all", "--repeat", "0"], "--repeat"),
])
def test_cli_exit_2_on_bad_input(argv, words, capsys, tmp_path):
    assert main([*argv, "--compares-dir", str(tmp_path)]) == 2
    assert words in capsys.readouterr().err
    assert not any(tmp_path.iterdir())          # nothing made before the input is valid


def _summary(lost: int, recovery: float | None, p99: float, passed: bool) -> dict:
    fault = {"fault_id": "partition-x", "name": "partition", "start_us": T0 + 10_000_000,
             "end_us": T0 + 30_000_000}
    return {"anomalies": {"lost": lost, "duplicate": 0},
            "metrics": {"ack_latency_ms": {"p50": 5.0, "p99": p99, "p999": p99 * 2},
                        "fault_windows": [{**fault, "ack_latency_ms": {"p50": 9.0, "p99": p99 * 3, "p999": 1e3}}],
                        "throughput": {"acked_per_s_mean": 1990.0}, "max_unavailability_s": 4.0,
                        "recovery": [{**fault, "seconds": recovery}]},
            "verdict": {"passed": passed, "failures": [] if passed else ["lost > 0: lost is 0"]}}


def _run_dir(root: Path, name: str, summary: dict, stall: tuple[int, int] = (10, 20)) -> Path:
    """A run dir with summary.json and a produced history: 100 records/s for 40 s, 5 ms
    each, except none acked during `stall` (seconds) and those sent then acked at its end."""
    run = root / name
    (run / "report").mkdir(parents=True)
    (run / "history" / "produced").mkdir(parents=True)
    (run / "report" / "summary.json").write_text(json.dumps(summary))
    send = [T0 + i * 10_000 for i in range(4000)]
    ack = [s + 5_000 if not stall[0] * 1e6 <= s - T0 < stall[1] * 1e6 else T0 + stall[1] * 1_000_000
           for s in send]
    pq.write_table(pa.table({"status": ["acked"] * 4000, "send_ts_us": send, "ack_ts_us": ack}),
                   run / "history" / "produced" / "p0-000000.parquet")
    return run


def _rows(tmp_path: Path, specs: list[tuple[str, int, dict]]) -> list[dict]:
    runs = {p.label: p for p in plan("leader-isolation", parse_vary(["producer.acks=1,all"]), 1)}
    rows = []
    for label, repeat, summary in specs:
        run = _run_dir(tmp_path, f"{label}-{repeat}", summary)
        status = "passed" if summary["verdict"]["passed"] else "failed"
        rows.append(run_row(runs[label], run, status, 0 if status == "passed" else 1, None,
                            Summary.from_dict(summary)))
        rows[-1]["repeat"] = repeat
    return rows


def test_outputs_call_lost_and_recovery(tmp_path):
    rows = _rows(tmp_path, [("producer.acks=1", 0, _summary(120, 3.0, 40.0, True)),
                            ("producer.acks=all", 0, _summary(0, 9.5, 900.0, False))])
    doc = write_outputs(tmp_path, {"scenario": "leader-isolation", "seed": 5, "repeat": 1,
                                   "axes": [{"key": "producer.acks", "values": ["1", "all"]}]}, rows)
    called = {(d["metric"], d["kind"]) for d in doc["differences"]}
    assert called == {("anomaly.lost", "zero vs nonzero"), ("fault1.partition.recovery_s", "recovery > 2x apart")}
    lost = next(d for d in doc["differences"] if d["metric"] == "anomaly.lost")
    assert (lost["zero"], lost["nonzero"]) == ("producer.acks=all", "producer.acks=1")
    assert doc["exit_code"] == 1         # acks=all does not meet leader-isolation's `lost > 0`
    on_disk = json.loads((tmp_path / "compare.json").read_text())
    stats = {v["variant"]: v["stats"] for v in on_disk["variants"]}
    assert stats["producer.acks=all"]["fault1.partition.ack_ms.p99"]["median"] == 2700.0
    page = (tmp_path / "index.html").read_text()
    assert "class='called'" in page and "data:image/png;base64," in page
    assert "producer.acks=1-0/report/index.html" in page
    suite = ET.fromstring((tmp_path / "junit.xml").read_text())
    assert (suite.get("tests"), suite.get("failures")) == ("2", "1")


def test_no_difference_when_spreads_overlap():
    rows = [{"variant": v, "metrics": {"anomaly.lost": lost, "fault1.kill.recovery_s": rec}}
            for v, lost, rec in [("a", 0, 2.0), ("a", 5, 9.0), ("a", 0, 3.0),
                                 ("b", 7, 8.0), ("b", 3, 10.0), ("b", 9, 12.0)]]
    assert differences(aggregate(rows)) == []
    # the same medians, with spreads apart, are called
    rows[1]["metrics"] = {"anomaly.lost": 0, "fault1.kill.recovery_s": 2.5}
    called = {d["metric"] for d in differences(aggregate(rows))}
    assert called == {"anomaly.lost", "fault1.kill.recovery_s"}
    stats = aggregate(rows)["b"]["fault1.kill.recovery_s"]
    assert (stats["median"], stats["min"], stats["max"], stats["n"]) == (10.0, 8.0, 12.0, 3)


def test_never_recovered_is_slower_than_any_recovery():
    rows = [{"variant": "a", "metrics": {"fault1.kill.recovery_s": 4.0}},
            {"variant": "b", "metrics": {"fault1.kill.recovery_s": None}}]
    (call,) = differences(aggregate(rows))
    assert (call["faster"], call["slower"]) == ("a", "b") and "never recovered" in call["why"]
    # below the 1 s floor, 0.1 s against 0.4 s is not news
    rows = [{"variant": "a", "metrics": {"fault1.kill.recovery_s": 0.1}},
            {"variant": "b", "metrics": {"fault1.kill.recovery_s": 0.4}}]
    assert differences(aggregate(rows)) == []


def test_per_second_from_history(tmp_path):
    run = _run_dir(tmp_path, "r", _summary(0, 1.0, 1.0, True), stall=(10, 20))
    s = per_second(run)
    by_second = dict(zip(s["second"], s["acked"]))
    assert by_second[5.0] == 100 and by_second[15.0] == 0      # the stall: zero, not skipped
    assert by_second[20.0] == 1000 + 100       # the stalled records all acked at its end
    p99 = dict(zip(s["second"], s["p99_ms"]))
    assert p99[5.0] == pytest.approx(5.0) and p99[20.0] > 9000 and math.isnan(p99[15.0])


def test_an_interrupted_compare_exits_2():
    from harness.batch.compare import exit_code
    passed = {"status": "passed"}
    assert exit_code([passed, passed], planned=2) == 0
    assert exit_code([passed, {"status": "failed"}], planned=2) == 1
    assert exit_code([passed, {"status": "unknown", "interrupted": True}], planned=3) == 2
    assert exit_code([passed], planned=2) == 2, "stopped between two runs"
