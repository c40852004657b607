"""`harness upgrade-check --from 4.1 --to 4.3` on a real cluster: the plan printed first,
every node upgraded under load (controllers, then brokers), the release version raised,
nothing lost, each step's time reported. (3.9 -> 4 is covered at the fault level by
tests/integration/faults/test_rolling_upgrade.py.)"""
from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

from load_cut_check import check_load_cut  # same dir: pytest puts it on sys.path
from test_harness_run import _leftovers, _only_run

HARNESS = [sys.executable, "-m", "harness.cli"]


def test_upgrade_check_upgrades_every_node_under_load_and_judges_it(tmp_path):
    from clusters.versions import resolve_version
    old, new = resolve_version("4.1").version, resolve_version("4.3").version   # 4.1.2, 4.3.1
    runs = tmp_path / "runs"
    proc = subprocess.run([*HARNESS, "upgrade-check", "--from", "4.1", "--to", "4.3",
                           "--runs-dir", str(runs), "--plain"],
                          capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert proc.stdout.startswith(f"plan: KRaft minor upgrade 4.1 -> 4.3, {old} -> {new}")
    run_dir = _only_run(runs)
    [upgrade] = json.loads((run_dir / "faults.json").read_text())
    assert upgrade["error"] is None and upgrade["inject_done_s"] is not None
    detail = upgrade["detail"]
    assert (detail["from_version"], detail["to_version"]) == (old, new)
    assert sorted(detail["settle_s"]) == ["kafka-1", "kafka-2", "kafka-3"]
    assert [s["action"] for s in detail["steps"]] == ["replace"] * 3 + ["features"]
    assert all(s["seconds"] > 0 for s in detail["steps"])
    assert detail["features_after"]["metadata.version"].startswith("4.3-")
    assert re.search(rf"\d+\.\d s  kafka-1: stop, start on {new}", proc.stdout), proc.stdout[-2000:]
    # every node's current container runs the new version (kafka-N.log; a re-created
    # node's earlier containers are kafka-N.<n>.log)
    current = [p for p in (run_dir / "logs").glob("kafka-*.log") if re.fullmatch(r"kafka-\d+\.log", p.name)]
    assert len(current) == 3, sorted(p.name for p in (run_dir / "logs").iterdir())
    for log in current:
        versions = [line for line in log.read_text(errors="replace").splitlines()
                    if "Kafka version:" in line]
        assert versions and f"Kafka version: {new} " in versions[-1], (log.name, versions[-3:])
        first = run_dir / "logs" / log.name.replace(".log", ".1.log")   # its first container
        assert f"Kafka version: {old} " in first.read_text(errors="replace"), first.name
    summary = json.loads((run_dir / "result.json").read_text())
    assert summary["status"] == "passed", summary
    check_load_cut(run_dir)        # the scenario's end_after_faults_s
    assert not _leftovers(run_dir.name)
    assert Path(run_dir / "report" / "index.html").is_file()
