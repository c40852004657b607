"""`harness suite gate` on real clusters: the CI gate's claims hold, in one job with one
Spark session, and the suite's three outputs say so."""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from xml.etree import ElementTree as ET

from test_harness_run import _leftovers, _sigint_default  # same dir: pytest puts it on sys.path

from harness.run.phases import read_phases


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


def test_ctrl_c_stops_the_whole_suite_and_it_still_writes_its_table(tmp_path):
    # Before: the runner took the Ctrl-C as the end of one run, and the suite went on
    # to the next scenario.
    proc = subprocess.Popen([sys.executable, "-m", "harness.cli", "suite", "gate", "--plain",
                             "--suites-dir", str(tmp_path)], stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True, start_new_session=True,
                            preexec_fn=_sigint_default)
    try:
        run_dir = _wait_for_phase(tmp_path, "warm-up", proc)
        os.killpg(proc.pid, signal.SIGINT)           # a terminal's Ctrl-C: the whole job
        out, _ = proc.communicate(timeout=600)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 2, out[-4000:]
    assert "interrupted: the rest not started" in out, out[-2000:]
    (suite_dir,) = list(tmp_path.iterdir())
    rows = {r["scenario"]: r for r in json.loads((suite_dir / "summary.json").read_text())["rows"]}
    assert rows["quick"]["verdict"] == "unknown" and "interrupted" in rows["quick"]["reason"]
    assert rows["leader-isolation"]["verdict"] == "skipped", rows["leader-isolation"]
    assert [d for d in suite_dir.iterdir() if d.is_dir()] == [run_dir], "no second run started"
    assert (suite_dir / "junit.xml").exists() and (suite_dir / "index.html").exists()
    assert not _leftovers(run_dir.name)


def _wait_for_phase(suite_root, phase: str, proc, timeout_s: float = 600):
    """The first run's directory, once it has started `phase`."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline and proc.poll() is None:
        for run_dir in suite_root.glob("*/*/"):
            if any(p["name"] == phase for p in read_phases(run_dir) or []):
                return run_dir
        time.sleep(0.2)
    raise AssertionError(f"no run reached {phase}: {proc.poll()=}")
