"""`harness run` on real clusters: the default scenario passes; Ctrl-C in a phase heals,
stops and removes everything, and the stored history is judged or clearly unknown."""
from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml
from terminal import run_in_terminal  # same dir: pytest puts it on sys.path

from clusters.docker_env import docker_client
from harness.run.phases import read_phases

HARNESS = [sys.executable, "-m", "harness.cli"]
ALL_PHASES = ["validate", "images", "cluster-up", "observer", "topics", "workloads-start",
              "warm-up", "faults", "heal-all", "recovery-wait", "workloads-stop", "drain",
              "logs", "cluster-stop", "verify", "verdict", "report"]


def _leftovers(run_id: str) -> list[str]:
    client = docker_client()
    found = [f"container {c.name}" for c in client.containers.list(
        all=True, filters={"label": f"harness.run-id={run_id}"})]
    found += [f"network {n.name}" for n in client.networks.list(
        filters={"label": f"harness.run-id={run_id}"})]
    found += [f"mount {line.split()[1]}" for line in Path("/proc/mounts").read_text().splitlines()
              if run_id in line]
    return found


def _only_run(runs: Path) -> Path:
    dirs = [d for d in runs.iterdir() if d.is_dir()]
    assert len(dirs) == 1, dirs
    return dirs[0]


def test_default_scenario_passes_end_to_end(tmp_path):
    """`harness run` with no argument, in a 160x50 terminal (its live panel on): every
    phase ok, verdict passed, report written; the closing tables keep every row."""
    runs = tmp_path / "runs"
    code, screen = run_in_terminal([*HARNESS, "run", "--runs-dir", str(runs)], cols=160, rows=50)
    assert code == 0, screen[-3000:]
    run_dir = _only_run(runs)
    phases = read_phases(run_dir)
    assert [p["name"] for p in phases] == ALL_PHASES
    assert all(p["outcome"] == "ok" for p in phases), phases
    assert "PASSED" in screen and "report:" in screen
    # what the panel used to erase: each fault's row under the scenario's name, the
    # planned-fault table, and the report's path on a line of its own
    end = screen[re.search(r"run \S+: PASSED", screen).start():]      # the closing table's title
    for label in ("timeline[0] kill", "timeline[1] partition"):
        assert end.count(label) == 2, end                  # its recovery row and its plan row
    assert f"report: {run_dir}/report/index.html" in end.replace("\n", ""), end
    result = json.loads((run_dir / "result.json").read_text())
    assert result["status"] == "passed" and result["exit_code"] == 0
    summary = json.loads((run_dir / "report" / "summary.json").read_text())
    assert summary["counts"]["acked"] > 50_000 and summary["anomalies"]["lost"] == 0
    assert {r["name"] for r in summary["metrics"]["recovery"]} == {"kill", "partition"}
    resolved = yaml.safe_load((run_dir / "scenario.yaml").read_text())
    assert resolved["cluster"]["version"] == "3.9.2" and resolved["seed"] == 1
    faults = json.loads((run_dir / "faults.json").read_text())
    assert [f["error"] for f in faults] == [None, None]
    assert all(f["healed_s"] is not None for f in faults)
    assert (run_dir / "report" / "index.html").stat().st_size > 10_000
    assert list((run_dir / "logs").glob("*.log"))
    assert not _leftovers(run_dir.name)
    page = run_dir / "report" / "index.html"
    page.unlink()
    again = subprocess.run([*HARNESS, "report", str(run_dir)], capture_output=True, text=True, timeout=300)
    assert again.returncode == 0 and page.stat().st_size > 10_000, again.stderr


# 4.1 runs under load in test_upgrade_check (its cluster starts on 4.1)
# out of CI (-m slow): 3.9 and 4.x run in the other tests, every line in the matrices
@pytest.mark.slow
@pytest.mark.parametrize("line", ["3.8"])
def test_quick_passes_on_other_release_lines(tmp_path, line):
    """`harness run quick` on a 4.x line other than 4.3 and a 3.x line other than 3.9:
    the line resolves to its newest patch, its image is built on first use, the run passes."""
    from clusters.versions import resolve_version
    exact = resolve_version(line).version          # 4.1.2, 3.8.1 when written
    runs = tmp_path / "runs"
    proc = subprocess.run([*HARNESS, "run", "quick", "--set", f"cluster.version={line}",
                           "--runs-dir", str(runs), "--plain"],
                          capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    run_dir = _only_run(runs)
    assert yaml.safe_load((run_dir / "scenario.yaml").read_text())["cluster"]["version"] == exact
    brokers = [p for p in (run_dir / "logs").glob("kafka-*.log")]
    assert brokers and all(f"Kafka version: {exact} " in p.read_text(errors="replace") for p in brokers)
    summary = json.loads((run_dir / "report" / "summary.json").read_text())
    assert summary["anomalies"]["lost"] == 0 and summary["counts"]["acked"] > 10_000
    assert not _leftovers(run_dir.name)


def _sigint_default() -> None:
    # A shell that started pytest in the background (nohup, `&`) leaves SIGINT ignored,
    # and an ignored signal stays ignored across exec: Python would then install no
    # KeyboardInterrupt handler, and the test's Ctrl-C would reach nothing.
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def _interrupt_in(phase: str, tmp_path: Path) -> tuple[Path, subprocess.CompletedProcess]:
    runs = tmp_path / "runs"
    # Its own process group, as a terminal's foreground job: Ctrl-C reaches every process in it.
    proc = subprocess.Popen([*HARNESS, "run", "quick", "--runs-dir", str(runs), "--plain"],
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            start_new_session=True, preexec_fn=_sigint_default)
    deadline = time.monotonic() + 600
    run_dir, sent = None, False
    try:
        while time.monotonic() < deadline and proc.poll() is None:
            dirs = [d for d in runs.iterdir()] if runs.exists() else []
            run_dir = dirs[0] if dirs else None
            current = [p for p in (read_phases(run_dir) or []) if p["outcome"] is None] \
                if run_dir else []
            if current and current[-1]["name"] == phase:
                time.sleep(1.0 if phase in ("faults", "verify", "workloads-stop") else 0.0)
                os.killpg(proc.pid, signal.SIGINT)
                sent = True
                break
            time.sleep(0.05)
        out, _ = proc.communicate(timeout=600)
        time.sleep(2)                 # workers notice the end of their parent within ~0.2 s
        assert not _session_survivors(proc.pid), _session_survivors(proc.pid)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert run_dir is not None, "the run never made its directory"
    if not sent:
        durations = {p["name"]: (p["end_us"] - p["start_us"]) / 1e3 for p in read_phases(run_dir)}
        pytest.skip(f"phase {phase} lasted {durations.get(phase, 0):.0f} ms: "
                    "shorter than this test can catch")
    return run_dir, subprocess.CompletedProcess(proc.args, proc.returncode, out, "")


def _session_survivors(sid: int) -> list[str]:
    """Processes still in the run's session (its workers, a Spark JVM ...)."""
    ps = subprocess.run(["ps", "-eo", "sid=,pid=,comm="], capture_output=True, text=True).stdout
    return [line.strip() for line in ps.splitlines() if line.split()[0] == str(sid)]


# CI interrupts five phases (about four minutes); HARNESS_CTRL_C_ALL=1 interrupts every phase
# (about fifteen; its result is in benchmarks/RESULTS.md).
# CI: a start, a heal and a judging interrupted (warm-up and drain stop the same workload
# processes the faults phase does: HARNESS_CTRL_C_ALL=1 runs every phase)
CTRL_C_PHASES = ALL_PHASES if os.environ.get("HARNESS_CTRL_C_ALL") == "1" else \
    ["cluster-up", "faults", "verify"]


@pytest.mark.parametrize("phase", CTRL_C_PHASES)
def test_ctrl_c_in_a_phase_heals_stops_and_leaves_a_judgeable_history(tmp_path, phase):
    run_dir, proc = _interrupt_in(phase, tmp_path)
    assert proc.returncode == 2, proc.stdout[-3000:]
    # A phase shorter than the signal's way there may already have ended: the run then
    # says the phase it was in (or had just finished), never an earlier one.
    said = re.search(r"interrupted in phase (\S+)", proc.stdout)
    assert said, proc.stdout[-3000:]
    stopped = said[1]
    assert ALL_PHASES.index(stopped) >= ALL_PHASES.index(phase), (phase, stopped)
    phases = {p["name"]: p for p in read_phases(run_dir)}
    assert phases[stopped]["outcome"] in ("interrupted", "ok"), phases[stopped]
    heals = [p for p in read_phases(run_dir) if p["name"] == "heal-all"]
    if heals:       # interrupted inside heal-all, the teardown heals again: the last one counts
        assert heals[-1]["outcome"] in ("ok", "failed"), heals
        assert not heals[-1]["detail"].get("leftovers"), heals
    # Interrupted before a cluster object existed, there is no cluster to stop.
    assert phases.get("cluster-stop", {"outcome": "ok"})["outcome"] == "ok"
    assert not _leftovers(run_dir.name)
    verify = subprocess.run([*HARNESS, "verify", str(run_dir)], capture_output=True, text=True,
                            timeout=600)
    if ALL_PHASES.index(stopped) > ALL_PHASES.index("drain"):   # a complete history: a verdict
        assert verify.returncode == 0, verify.stdout[-2000:] + verify.stderr[-2000:]
        assert "PASSED" in verify.stdout
    else:
        assert verify.returncode == 2
        assert f"unknown: interrupted in phase {stopped}" in verify.stdout, verify.stdout
