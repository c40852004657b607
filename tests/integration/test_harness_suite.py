"""`harness suite gate` on real clusters: the CI gate's claims hold, in one job with one
Spark session, and the suite's three outputs say so."""
from __future__ import annotations

import json
import subprocess
import sys
from xml.etree import ElementTree as ET


def test_gate_suite_passes_and_writes_its_table(tmp_path):
    proc = subprocess.run([sys.executable, "-m", "harness.cli", "suite", "gate", "--plain",
                           "--suites-dir", str(tmp_path)], capture_output=True, text=True, timeout=1500)
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-2000:]
    (suite_dir,) = list(tmp_path.iterdir())
    summary = json.loads((suite_dir / "summary.json").read_text())
    rows = {r["scenario"]: r for r in summary["rows"]}
    assert set(rows) == {"quick", "leader-isolation"}
    assert all(r["verdict"] == "passed" for r in rows.values()), rows
    assert rows["leader-isolation"]["observed"]["lost"] > 0          # the acks=1 claim reproduced
    assert "lost" not in rows["quick"]["observed"]
    junit = ET.parse(suite_dir / "junit.xml").getroot()
    assert junit.get("tests") == "2" and junit.get("failures") == "0" and junit.get("errors") == "0"
    html = (suite_dir / "index.html").read_text()
    assert html.count("/report/index.html") == 2
    assert (suite_dir / "summary.md").read_text().count("/report/index.html)") == 2
    for r in rows.values():
        assert (suite_dir / r["run_dir"].split("/")[-1] / "report" / "index.html").exists()
