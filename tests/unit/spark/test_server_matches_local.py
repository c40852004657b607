"""A history verified on the Spark Connect server and in an in-process session gives
the same summary, to the last field but the clock's: one synthetic history with every
anomaly kind here, in CI; the stored runs too with -m slow. The in-process verify is
the automatic fallback (the server's port taken), which must say so. In CI its driver
runs on the machine's JDK 17 where the server has a JDK 25, so the same verify also
shows that a JDK 17 driver verifies like a JDK 25 one (test_driver_jdk_fallback.py,
slow, compares two in-process drivers)."""
from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
from pathlib import Path

import pytest
from synthetic import INJECTABLE, SyntheticSpec, generate
from test_driver_jdk_fallback import jdk17_home

from spark_reports.driver_jdk import candidates

pytestmark = pytest.mark.spark
ROOT = Path(__file__).resolve().parents[3]
STORED = ROOT / "tests" / "data" / "stored_runs"
# the clock of one verify: when, how long, each step's seconds
CLOCK = ("generated_at", "verify_seconds", "step_seconds")


def _verify(run: Path, env: dict) -> tuple[dict, str]:
    proc = subprocess.run([sys.executable, "-m", "harness.cli", "verify", str(run)], cwd=ROOT,
                          env={**os.environ, "PYTHONPATH": str(ROOT), **env},
                          capture_output=True, text=True, timeout=900)
    assert proc.returncode in (0, 1), proc.stdout + proc.stderr[-3000:]
    summary = json.loads((run / "report" / "summary.json").read_text())
    return {k: v for k, v in summary.items() if k not in CLOCK}, proc.stdout


def _both_ways(tmp_path: Path, source: Path, local_env: dict | None = None
               ) -> tuple[dict, dict]:
    """The summaries verified on the server and by the in-process fallback."""
    on_server, in_process = tmp_path / "server", tmp_path / "local"
    shutil.copytree(source, on_server)
    shutil.copytree(source, in_process)
    server_summary, _ = _verify(on_server, {})
    with socket.socket() as taken:                  # the fallback's server cannot start
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        local_summary, out = _verify(in_process, {
            "HARNESS_STATE": str(tmp_path / "state"),
            "HARNESS_SPARK_CONNECT_PORT": str(taken.getsockname()[1]), **(local_env or {})})
    assert "verifying in a Spark session of this process instead" in out, out
    return server_summary, local_summary


def test_every_anomaly_kind_gives_the_same_summary_on_the_server(tmp_path):
    truth = generate(tmp_path / "history", SyntheticSpec(
        records=3000, producers=3, partitions=4, rate_per_s=1000,
        inject={k: 2 + i % 3 for i, k in enumerate(INJECTABLE)}, seed=3))
    # the fallback's driver on JDK 17 when the server's is a JDK 25 (driver_jdk)
    jdk17 = jdk17_home() if candidates() else None
    server, local = _both_ways(tmp_path, tmp_path / "history",
                               {"HARNESS_SPARK_JAVA_HOME": jdk17} if jdk17 else None)
    assert server["anomalies"] == truth["anomalies"]
    if jdk17:
        assert server["config"]["spark"]["driver_java"].startswith("25.")
        assert local["config"]["spark"]["driver_java"].startswith("17.")
        for s in (server, local):
            del s["config"]["spark"]["driver_java"]
    assert server == local


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(p.name for p in STORED.iterdir() if p.is_dir()))
def test_stored_runs_give_the_same_summary_on_the_server(tmp_path, name):
    server, local = _both_ways(tmp_path, STORED / name)
    assert server == local
