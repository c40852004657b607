"""Without a JDK 25 the driver runs on the machine's JDK 17, with its class archive
if setup wrote one (spark_reports/driver_jdk.py): the same verify. Slow (two fresh
driver JVMs, 80 s in CI's unit run): CI's test_server_matches_local verifies the same
kind of history with its fallback driver on JDK 17 against the server's JDK 25."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from synthetic import INJECTABLE, SyntheticSpec, generate

from spark_reports.driver_jdk import candidates, release_version

pytestmark = pytest.mark.spark
ROOT = Path(__file__).resolve().parents[3]


def jdk17_home() -> str | None:
    """The machine's JDK 17 (test_server_matches_local's fallback driver uses it too)."""
    for home in ("/usr/lib/jvm/java-17-openjdk-amd64", os.environ.get("JAVA_HOME") or ""):
        if home and (release_version(home) or (0,))[0] == 17:
            return home
    return None


@pytest.mark.slow
def test_a_jdk_17_driver_verifies_like_a_jdk_25_one(tmp_path):
    jdk17 = jdk17_home()
    if jdk17 is None or not candidates():
        pytest.skip("needs both a JDK 17 and a JDK 25")
    spec = SyntheticSpec(records=3000, producers=2, partitions=2, faults=1,
                         inject={k: 1 for k in INJECTABLE}, seed=9)
    truth = generate(tmp_path / "run", spec)
    summaries = {}
    # the driver JVM each verify starts itself: in-process sessions, not the shared server
    for name, env in (("17", {"HARNESS_SPARK_JAVA_HOME": jdk17, "HARNESS_SPARK_MODE": "local"}),
                      ("25", {"HARNESS_SPARK_MODE": "local"})):
        run = tmp_path / "run"
        proc = subprocess.run(
            [sys.executable, "-m", "harness.cli", "verify", str(run)], cwd=ROOT,
            env={**{k: v for k, v in os.environ.items() if k != "JAVA_HOME"}, **env},
            capture_output=True, text=True, timeout=600)
        assert proc.returncode == 1, proc.stderr[-2000:]
        summaries[name] = json.loads((run / "report" / "summary.json").read_text())
    assert summaries["17"]["config"]["spark"]["driver_java"].startswith("17.")
    assert summaries["25"]["config"]["spark"]["driver_java"].startswith("25.")
    for s in summaries.values():
        assert s["anomalies"] == truth["anomalies"]
    assert summaries["17"]["metrics"] == summaries["25"]["metrics"]
