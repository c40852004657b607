"""`harness run zk-migration` on a real ZooKeeper-mode 3.9 cluster: migrated to KRaft
under load the documented way, the verdict holds, every step is an event in order,
ZooKeeper ends stopped and the brokers run as KRaft brokers, nothing is left behind."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from load_cut_check import check_load_cut  # same dir: pytest puts it on sys.path
from test_harness_run import _leftovers

from core.history import read_table
from faults.migration import STEPS

HARNESS = [sys.executable, "-m", "harness.cli"]


def _step_events(run_dir: Path) -> list[dict]:
    rows = sorted(read_table(run_dir, "events").to_pylist(), key=lambda r: r["ts_us"])
    return [{**r, "detail": json.loads(r["detail"])} for r in rows
            if r["kind"] == "phase" and r["name"].startswith("zk-migration:")]


def test_zk_migration_under_load_passes_and_ends_as_kraft(tmp_path):
    runs = tmp_path / "runs"
    proc = subprocess.run([*HARNESS, "run", "zk-migration", "--runs-dir", str(runs), "--plain"],
                          capture_output=True, text=True, timeout=900)
    run_dir = next(d for d in runs.iterdir() if d.is_dir())
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert "PASSED" in proc.stdout
    summary = json.loads((run_dir / "report" / "summary.json").read_text())
    assert summary["anomalies"]["lost"] == 0 and summary["counts"]["acked"] > 50_000
    # the load ended 20 s after the migration (end_after_faults_s), not at its 180 s
    check_load_cut(run_dir)
    assert summary["counts"]["load_shortfall"] == 0

    steps = _step_events(run_dir)
    assert [s["name"] for s in steps] == [f"zk-migration:{s}" for s in STEPS]
    assert all(s["detail"]["outcome"] == "ok" and s["detail"]["end_us"] >= s["ts_us"] for s in steps)
    assert all(a["detail"]["end_us"] <= b["ts_us"] for a, b in zip(steps, steps[1:]))

    [fault] = json.loads((run_dir / "faults.json").read_text())
    assert fault["error"] is None and fault["targets"] == ["broker-1", "broker-2", "broker-3",
                                                           "controller-1"]
    by_step = {s["step"]: s for s in fault["detail"]["steps"]}
    assert by_step["retire-zookeeper"]["zookeeper_running"] == {"zk-1": False}
    assert "LeaderId:               1001" in fault["detail"]["quorum_status"]
    # The controller's own account of the metadata copy (its log's timestamps).
    assert 0 < by_step["metadata-migration"]["driver_s"] < 60

    logs = run_dir / "logs"
    for b in (1, 2, 3):
        first, final = (logs / f"broker-{b}.1.log").read_text(), (logs / f"broker-{b}.log").read_text()
        assert "zookeeper.connect = zk-1:2181" in first           # started as a ZooKeeper broker
        assert "process.roles = [broker]" in final and "zookeeper.connect = null" in final
    assert "Completed migration of metadata from ZooKeeper to KRaft" in (
        logs / "controller-1.1.log").read_text()
    assert (logs / "zk-1.log").exists()
    assert not _leftovers(run_dir.name)
