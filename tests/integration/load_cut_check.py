"""What a run with workload.end_after_faults_s must show: the load ended that long after
the faults (the workloads-stop phase begins once they are healed), unless its duration
came first; the history's `load-cut` event says when, and no record was sent much later."""
from __future__ import annotations

import json
from pathlib import Path

import pyarrow.compute as pc
import yaml

from core.history import LOAD_CUT, read_table


def check_load_cut(run_dir: Path) -> bool:
    """Assert the cut as the stored scenario planned it; True when the load was cut
    (False: it ran its duration first)."""
    workload = yaml.safe_load((run_dir / "scenario.yaml").read_text())["workload"]
    after_s, duration_s = workload["end_after_faults_s"], workload["duration_s"]
    phases = {p["name"]: p for p in json.loads((run_dir / "phases.json").read_text())}
    began, stopping = phases["workloads-start"]["start_us"], phases["workloads-stop"]["start_us"]
    events = read_table(run_dir, "events").to_pylist()
    cuts = [e["ts_us"] for e in events if e["kind"] == "phase" and e["name"] == LOAD_CUT]
    due = stopping + int(after_s * 1e6)
    if due >= began + int(duration_s * 1e6):
        assert not cuts, "a cut after the load's own end"
        return False
    [cut] = cuts
    assert abs(cut - due) < 1_000_000, (cut, due)
    last_send = pc.max(read_table(run_dir, "produced")["send_ts_us"]).as_py()
    assert last_send <= cut + 3_000_000, (last_send - cut) / 1e6
    return True
