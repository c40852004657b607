"""A history verified on the Spark Connect server and in an in-process session gives
the same summary, to the last field but the clock's: one synthetic history with every
anomaly kind here, in CI; the stored runs too with -m slow. The in-process verify is
the automatic fallback (the server's port taken), which must say so."""
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


def _both_ways(tmp_path: Path, source: Path) -> None:
    on_server, in_process = tmp_path / "server", tmp_path / "local"
    shutil.copytree(source, on_server)
    shutil.copytree(source, in_process)
    server_summary, _ = _verify(on_server, {})
    with socket.socket() as taken:                  # the fallback's server cannot start
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        local_summary, out = _verify(in_process, {
            "HARNESS_STATE": str(tmp_path / "state"),
            "HARNESS_SPARK_CONNECT_PORT": str(taken.getsockname()[1])})
    assert "verifying in a Spark session of this process instead" in out, out
    assert server_summary == local_summary


def test_every_anomaly_kind_gives_the_same_summary_on_the_server(tmp_path):
    generate(tmp_path / "history", SyntheticSpec(
        records=3000, producers=3, partitions=4, rate_per_s=1000,
        inject={k: 2 + i % 3 for i, k in enumerate(INJECTABLE)}, seed=3))
    _both_ways(tmp_path, tmp_path / "history")


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(p.name for p in STORED.iterdir() if p.is_dir()))
def test_stored_runs_give_the_same_summary_on_the_server(tmp_path, name):
    _both_ways(tmp_path, STORED / name)
