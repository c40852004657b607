"""`harness report --index DIR` over synthetic run dirs (manifest.json + report/summary.json,
as runs, suites and compares leave them): one section per scenario, oldest to newest,
every point of every trend a link to its run's report."""
from __future__ import annotations

import json
import re
from pathlib import Path

from harness.batch.report_index import find_runs
from harness.cli import main

HOUR_US = 3_600_000_000


def _run(root: Path, rel: str, scenario: str, hour: int, lost: int, recovery: float | None) -> Path:
    run = root / rel
    (run / "report").mkdir(parents=True)
    (run / "manifest.json").write_text(json.dumps({"scenario": scenario, "kafka": "3.9.2",
                                                   "start_us": 1_800_000_000_000_000 + hour * HOUR_US}))
    (run / "report" / "summary.json").write_text(json.dumps({
        "anomalies": {"lost": lost, "duplicate": 0},
        "metrics": {"max_recovery_s": recovery, "ack_latency_ms": {"p99": 40.0 + hour}},
        "verdict": {"passed": lost == 0}}))
    return run


def test_index_links_every_point_to_its_run(tmp_path, capsys):
    _run(tmp_path, "suites/gate-1/r2", "quick", 2, 0, 3.5)
    _run(tmp_path, "suites/gate-1/r1", "leader-isolation", 1, 120, 20.0)
    _run(tmp_path, "runs/r0", "quick", 0, 0, 4.0)
    _run(tmp_path, "compares/c/r3", "leader-isolation", 3, 80, None)      # never recovered
    (tmp_path / "runs" / "broken" / "report").mkdir(parents=True)         # no summary: not a point
    runs = find_runs(tmp_path)
    assert [r["run_dir"].name for r in runs] == ["r0", "r1", "r2", "r3"]
    assert main(["report", "--index", str(tmp_path)]) == 0
    page = (tmp_path / "index.html").read_text()
    assert "4 runs below" in page and page.count("<h2 id=") == 2
    svg_links = set(re.findall(r'xlink:href="([^"#][^"]*)"', page))
    assert svg_links == {"runs/r0/report/index.html", "suites/gate-1/r1/report/index.html",
                         "suites/gate-1/r2/report/index.html", "compares/c/r3/report/index.html"}
    assert "lost 120" in page and "class='failed'" in page
    assert "index.html" in capsys.readouterr().out


def test_index_refuses_a_dir_without_runs(tmp_path, capsys):
    assert main(["report", "--index", str(tmp_path)]) == 2
    assert "no run with report/summary.json" in capsys.readouterr().err
    assert main(["report", "--index", str(tmp_path / "missing")]) == 2
    assert main(["report"]) == 2
