"""`harness compare leader-isolation --vary producer.acks=1,all` on real clusters: the
difference in `lost` is called (acks=1 loses acknowledged records when the leader is
cut off from its followers, acks=all loses none), with the same seed and fault
timeline in both variants, and the three outputs say so."""
from __future__ import annotations

import json
import subprocess
import sys
from xml.etree import ElementTree as ET

import docker
import pyarrow.parquet as pq


def test_compare_acks_1_vs_all_calls_lost(tmp_path):
    proc = subprocess.run([sys.executable, "-m", "harness.cli", "compare", "leader-isolation",
                           "--vary", "producer.acks=1,all", "--plain", "--compares-dir", str(tmp_path)],
                          capture_output=True, text=True, timeout=1500)
    out = proc.stdout[-4000:] + proc.stderr[-2000:]
    # exit 1: leader-isolation expects `lost > 0`, which the acks=all variant does not meet.
    assert proc.returncode == 1, out
    (compare_dir,) = list(tmp_path.iterdir())
    doc = json.loads((compare_dir / "compare.json").read_text())
    variants = {v["variant"]: v for v in doc["variants"]}
    assert set(variants) == {"producer.acks=1", "producer.acks=all"}
    assert variants["producer.acks=1"]["met_expectations"] is True, out
    assert variants["producer.acks=1"]["stats"]["anomaly.lost"]["min"] > 0
    assert variants["producer.acks=all"]["stats"]["anomaly.lost"]["max"] == 0
    lost = [d for d in doc["differences"] if d["metric"] == "anomaly.lost"]
    assert lost and (lost[0]["zero"], lost[0]["nonzero"]) == ("producer.acks=all", "producer.acks=1")
    runs = [r for v in doc["variants"] for r in v["runs"]]
    assert len({r["seed"] for r in runs}) == 1
    faults = [json.loads((compare_dir / r["run_dir"].split("/")[-1] / "faults.json").read_text())
              for r in runs]
    assert [[(f["label"], f["planned_at_s"]) for f in fs] for fs in faults][0] == \
        [[(f["label"], f["planned_at_s"]) for f in fs] for fs in faults][1]
    _every_lost_record_names_the_isolated_leader(
        compare_dir / variants["producer.acks=1"]["runs"][0]["run_dir"].split("/")[-1])
    page = (compare_dir / "index.html").read_text()
    assert "data:image/png;base64," in page and page.count("/report/index.html") == 2
    junit = ET.parse(compare_dir / "junit.xml").getroot()
    assert (junit.get("tests"), junit.get("failures")) == ("2", "1")
    ids = {r["run_dir"].split("/")[-1] for r in runs}
    left = [c.name for c in docker.from_env().containers.list(all=True)
            if c.labels.get("harness.run-id") in ids]
    assert left == []


def _every_lost_record_names_the_isolated_leader(run_dir) -> None:
    """acked_by: the producer's own view of who acknowledged. Every record acks=1 lost
    was acknowledged by the leader cut off from the others (clients still reached it),
    mostly after the controller had elected another; all charged to that fault."""
    summary = json.loads((run_dir / "report" / "summary.json").read_text())
    [fault] = summary["metrics"]["fault_windows"]
    leaders = [o for o in summary["timeline"]["observations"] if o["name"] == "leader"
               and o["partition"] == 0 and o["ts_us"] <= fault["start_us"]]
    isolated = leaders[-1]["leader"]
    lost = pq.read_table(run_dir / "report" / "anomalies" / "lost").to_pylist()
    assert lost and {r["leader_at_ack"] for r in lost} == {isolated}, \
        sorted({(r["leader_at_ack"], r["elected_leader_at_ack"]) for r in lost})
    assert any(r["elected_leader_at_ack"] != isolated for r in lost)        # deposed
    assert summary["anomalies_by_fault"] == {fault["fault_id"]: {"lost": len(lost)}} or \
        summary["anomalies_by_fault"][fault["fault_id"]]["lost"] == summary["anomalies"]["lost"]
    page = (run_dir / "report" / "index.html").read_text()
    assert "acknowledged them after timeline[0] partition began" in page
