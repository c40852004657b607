"""Whole verify runs on generated histories: injected anomalies of every kind, a
clean run, and runs that cannot be judged."""
from __future__ import annotations

import json
import threading
import xml.etree.ElementTree as ET

import pytest
from histories import History
from synthetic import INJECTABLE, SyntheticSpec, generate

from harness.run.judge import verify_command
from harness.run.judge import verify_stored_run as verify_run

pytestmark = pytest.mark.spark


def test_every_injected_kind_is_counted_exactly(tmp_path, spark):
    spec = SyntheticSpec(records=4000, producers=3, partitions=4, rate_per_s=1000,
                         inject={k: 2 + i % 3 for i, k in enumerate(INJECTABLE)}, seed=3)
    truth = generate(tmp_path, spec)
    result = verify_run(str(tmp_path), spark=spark)
    s = result.summary
    assert s["anomalies"] == truth["anomalies"]
    assert {k: s["counts"][k] for k in truth["counts"]} == truth["counts"]
    # scenario.yaml says idempotent, acks=all, min ISR 2, commit after processing
    assert s["config"]["facts"]["durable"] is True
    assert result.exit_code == 1
    assert len(result.verdict.failures) == 9       # torn_transaction: aborted_read read in part
    assert f"lost: {truth['anomalies']['lost']} > 0 (expected lost == 0 when durable)" \
        in result.verdict.failures
    # each stalled partition shows up as an unavailability window of about fault_seconds
    windows = s["metrics"]["unavailability"]
    assert len(windows) == spec.faults
    assert all(2.9 < w["seconds"] < 3.1 for w in windows)
    assert [r["partitions_from"] for r in s["metrics"]["recovery"]] == \
        ["leader/ISR changes observed"] * spec.faults
    # the spec's recovery: the second stall begins within 10 s of the first's heal, but
    # after the second fault's injection: it is the second fault's alone
    first, second = s["metrics"]["recovery"]
    assert [w["fault_id"] for w in windows] == [first["fault_id"], second["fault_id"]]
    assert second["seconds"] == pytest.approx((windows[1]["end_us"] - second["start_us"]) / 1e6)
    assert first["seconds"] == pytest.approx((windows[0]["end_us"] - first["start_us"]) / 1e6)
    assert first["partitions"]["t-0"]["seconds"] == pytest.approx(
        (windows[0]["end_us"] - first["start_us"]) / 1e6)
    junit = ET.parse(tmp_path / "report" / "junit.xml").getroot()
    assert junit.get("failures") == "9"
    html = (tmp_path / "report" / "index.html").read_text()
    assert html.count("data:image/png;base64,") == 4    # throughput, latency, lag, leaders
    assert "FAILED" in html and "report could not be rendered" not in html


def test_clean_history_exits_0(tmp_path, spark, capsys):
    generate(tmp_path, SyntheticSpec(records=1500, partitions=3, faults=1, seed=5))
    assert verify_command(str(tmp_path), None, None) == 0
    s = json.loads((tmp_path / "report" / "summary.json").read_text())
    assert set(s["anomalies"].values()) == {0}
    assert s["verdict"] == {**s["verdict"], "passed": True, "status": "passed", "failures": []}
    assert "PASSED" in capsys.readouterr().out
    for kind in s["anomalies"]:
        assert (tmp_path / "report" / "anomalies" / kind / "_SUCCESS").exists()


def test_no_drain_phase_is_unknown_exit_2(tmp_path, spark):
    h = History(tmp_path)
    rid = h.send("t", "p0", 0, offset=0)
    h.consume("t", 0, 0, rid)
    h.close()
    assert verify_command(str(tmp_path), None, None) == 2
    s = json.loads((tmp_path / "report" / "summary.json").read_text())
    assert s["verdict"]["status"] == "unknown" and s["verdict"]["passed"] is False
    assert "drain" in s["verdict"]["reason"]
    assert s["anomalies"]["lost"] == 0           # still computed and reported
    assert (tmp_path / "report" / "index.html").exists()


def test_unknown_enum_value_names_file_and_column(tmp_path, spark):
    h = History(tmp_path)
    rid = h.send("t", "p0", 0, offset=0, status="acked")
    h.consume("t", 0, 0, rid, phase="drain", isolation="read_uncommited")   # sic
    h.close()
    result = verify_run(str(tmp_path), spark=spark)
    assert result.exit_code == 2
    reason = result.verdict.reason
    assert "history/consumed/test-consumed-000000.parquet" in reason
    assert "'isolation'" in reason and "'read_uncommited'" in reason


def test_record_id_sent_twice_is_a_malformed_history(tmp_path, spark):
    """record_id is unique in produced (the spec); two rows of one record_id would be
    merged silently by the per-record aggregation, so they are refused with exit 2."""
    h = History(tmp_path)
    rid = h.send("t", "p0", 0, offset=0)
    h.send("t", "p0", 0, offset=1)                  # the same record_id again
    h.drain("t", 0, 0, rid)
    h.close()
    result = verify_run(str(tmp_path), spark=spark)
    assert result.exit_code == 2
    assert "history/produced" in result.verdict.reason
    assert "'record_id' is not unique: 1 row(s) repeat the record_id of another row" \
        in result.verdict.reason
    # the metrics, started beside the anomaly rules, were stopped before the scratch
    # views they read were removed
    assert not (tmp_path / "report" / "_views").exists()
    assert not [t for t in threading.enumerate() if t.name == "harness-metrics"]
    # nothing of theirs still runs in this session (classic or Spark Connect alike)
    for tag in ("harness-metrics", "harness-views", "harness-identity"):
        assert spark.interruptTag(tag) == []


def test_record_ids_not_named_producer_seq_are_judged_by_the_same_rules(tmp_path, spark):
    """A record_id that is not `<producer>-<seq>` is still one record: acked at 1 and
    read at 2 it is neither lost nor unexpected."""
    h = History(tmp_path)
    a = h.send("t", "p0", 0, offset=0)
    h.w["produced"].append({"producer": "p0", "seq": 1, "record_id": "custom-id", "topic": "t",
                            "partition": 0, "offset": 1, "status": "acked", "error": None,
                            "send_ts_us": h.tick(), "ack_ts_us": h.tick(), "txn_id": None,
                            "txn_seq": None, "txn_outcome": None})
    h.drain("t", 0, 0, a)
    h.drain("t", 0, 2, "custom-id")            # moved: read at 2, acked at 1
    h.close()
    s = verify_run(str(tmp_path), spark=spark).summary
    assert s["anomalies"]["lost"] == 0 and s["anomalies"]["unexpected"] == 0
