"""`harness verify --spark-master URL` against a real Spark cluster: a standalone
master and one worker started from pyspark's own jars on loopback, the verify in
a process of its own (its executors are the worker's JVMs, not the driver)."""
from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest
from synthetic import INJECTABLE, SyntheticSpec, generate

from spark_reports.driver_jdk import driver_jdk

# 95 s of CI's critical path (the Spark tests run one after another on one server): run
# when asked (-m slow); CI verifies on the Connect server and on a user's one (test_spark_remote)
pytestmark = [pytest.mark.spark, pytest.mark.slow]
ROOT = Path(__file__).resolve().parents[3]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _start(spark_home: str, args: list[str], env: dict, log: Path) -> subprocess.Popen:
    # a session of its own: the worker's executor JVMs are stopped with it
    return subprocess.Popen([os.path.join(spark_home, "bin", "spark-class"), *args], env=env,
                            stdout=log.open("w"), stderr=subprocess.STDOUT,
                            start_new_session=True)


def _wait_for(log: Path, text: str, timeout_s: float = 120) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if log.exists() and text in log.read_text(errors="replace"):
            return
        time.sleep(0.5)
    raise AssertionError(f"{text!r} not in {log} after {timeout_s} s:\n"
                         + log.read_text(errors="replace")[-3000:])


def test_verify_on_a_standalone_spark_cluster(tmp_path):
    import pyspark

    spark_home = os.path.dirname(pyspark.__file__)
    jdk = driver_jdk()
    env = {**os.environ, "SPARK_HOME": spark_home, "SPARK_LOCAL_IP": "127.0.0.1",
           **({"JAVA_HOME": jdk.home} if jdk.home else {})}
    port = _free_port()
    url = f"spark://127.0.0.1:{port}"
    procs = []
    try:
        procs.append(_start(spark_home, [
            "org.apache.spark.deploy.master.Master", "--host", "127.0.0.1", "--port", str(port),
            "--webui-port", str(_free_port())], env, tmp_path / "master.log"))
        _wait_for(tmp_path / "master.log", "I have been elected leader")
        procs.append(_start(spark_home, [
            "org.apache.spark.deploy.worker.Worker", url, "--host", "127.0.0.1", "--cores", "2",
            "--memory", "2g", "--webui-port", str(_free_port()),
            "--work-dir", str(tmp_path / "work")], env, tmp_path / "worker.log"))
        _wait_for(tmp_path / "master.log", "Registering worker")

        run = tmp_path / "run"
        truth = generate(run, SyntheticSpec(records=3000, producers=2, partitions=2, faults=1,
                                            inject={k: 1 for k in INJECTABLE}, seed=4))
        proc = subprocess.run([sys.executable, "-m", "harness.cli", "verify", str(run),
                               "--spark-master", url], cwd=ROOT, env=env,
                              capture_output=True, text=True, timeout=900)
        assert proc.returncode == 1, proc.stderr[-3000:]      # the injected anomalies fail it
        summary = json.loads((run / "report" / "summary.json").read_text())
        assert summary["config"]["spark"]["master"] == url
        assert summary["anomalies"] == truth["anomalies"]
        # the work ran on the worker's executors
        assert list((tmp_path / "work").glob("app-*/*/stderr"))
    finally:
        for p in reversed(procs):
            try:
                os.killpg(p.pid, signal.SIGTERM)
            except ProcessLookupError:
                pass
            p.wait(timeout=60)
