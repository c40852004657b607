"""A run that did not do what it planned never passes, on a real cluster: kafka-2 is
killed and, while it is down, paused. The pause cannot be injected; the run is judged
FAILED on fault_errors, the pause owns nothing (the kill keeps the ISR shrink it
caused), and the load met its plan (load_shortfall 0)."""
from __future__ import annotations

import json

import pytest
import yaml

SCENARIO = {
    "name": "kill-then-pause",
    "seed": 1,
    "cluster": {"mode": "kraft-combined", "version": "3.9", "brokers": 3},
    "topics": [{"name": "t", "partitions": 3, "replication_factor": 3,
                "configs": {"min.insync.replicas": 2}}],
    "workload": {"duration_s": 14, "producers": [{"name": "p0", "topic": "t", "rate": 300}]},
    "faults": {"timeline": [{"at": 1, "fault": "kill", "target": {"node": "kafka-2"}, "hold": 10},
                            {"at": 3, "fault": "pause", "target": {"node": "kafka-2"}, "hold": 3}]},
}


@pytest.mark.timeout(420)
def test_a_pause_of_a_killed_broker_fails_the_run(chaos_run, tmp_path):
    path = tmp_path / "kill-then-pause.yaml"
    path.write_text(yaml.safe_dump(SCENARIO))
    result = chaos_run(str(path))
    summary = json.loads((result.run_dir / "report" / "summary.json").read_text())
    assert result.exit_code == 1 and summary["verdict"]["status"] == "failed"
    assert summary["counts"]["fault_errors"] == 1, summary["fault_errors"]
    [err] = summary["fault_errors"]
    assert err["label"] == "timeline[1] pause"
    assert err["inject_error"].startswith("FaultError: kafka-2 is not running")
    assert [f for f in summary["verdict"]["failures"] if f.startswith("fault_errors")]
    assert summary["counts"]["load_shortfall"] == 0, summary["load"]
    # the pause owns nothing: every observed change in its span is the kill's
    pause = next(r for r in summary["metrics"]["recovery"] if r["label"] == "timeline[1] pause")
    kill = next(r for r in summary["metrics"]["recovery"] if r["label"] == "timeline[0] kill")
    assert pause["inject_error"] and pause["partitions"] == {}
    owners = {o["fault_id"] for o in summary["timeline"]["observations"]}
    assert pause["fault_id"] not in owners and kill["fault_id"] in owners
