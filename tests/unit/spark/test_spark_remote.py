"""`harness verify --spark-remote sc://HOST:PORT` (and HARNESS_SPARK_REMOTE) on a Spark
Connect server the user runs: here one started as a user would, with spark-submit and
pyspark's own SparkConnectServer on loopback, not by the harness. The harness starts
no server of its own then."""
from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest
from synthetic import INJECTABLE, SyntheticSpec, generate

from spark_reports.driver_jdk import driver_jdk

pytestmark = pytest.mark.spark
ROOT = Path(__file__).resolve().parents[3]
SERVER = "org.apache.spark.sql.connect.service.SparkConnectServer"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def users_server(tmp_path_factory):
    import pyspark
    home = os.path.dirname(pyspark.__file__)
    port = _free_port()
    log = tmp_path_factory.mktemp("server") / "server.log"
    jdk = driver_jdk()
    env = {**os.environ, "SPARK_LOCAL_IP": "127.0.0.1", **({"JAVA_HOME": jdk.home} if jdk.home else {})}
    proc = subprocess.Popen(
        [os.path.join(home, "bin", "spark-submit"), "--master", "local[1]", "--driver-memory", "1g",
         "--class", SERVER, "--conf", "spark.connect.grpc.binding.address=127.0.0.1",
         "--conf", f"spark.connect.grpc.binding.port={port}", "--conf", "spark.ui.enabled=false",
         "spark-internal"], env=env, stdout=log.open("w"), stderr=subprocess.STDOUT,
        start_new_session=True)
    try:
        deadline = time.monotonic() + 180
        while "Spark Connect server started" not in log.read_text(errors="replace"):
            assert proc.poll() is None and time.monotonic() < deadline, log.read_text()[-3000:]
            time.sleep(0.3)
        yield f"sc://127.0.0.1:{port}"
    finally:
        proc.terminate()
        try:
            proc.wait(30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def _verify(run: Path, tmp_path: Path, args: list[str], env: dict) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "harness.cli", "verify", str(run), *args], cwd=ROOT,
                          env={**os.environ, "PYTHONPATH": str(ROOT), "HARNESS_STATE": str(tmp_path / "state"),
                               **env}, capture_output=True, text=True, timeout=600)


# the flag only sets the variable (harness/cli/flags.py): the variable case is out of CI (slow)
@pytest.mark.parametrize("how", ["flag", pytest.param("variable", marks=pytest.mark.slow)])
def test_verify_on_a_connect_server_the_user_runs(tmp_path, users_server, how):
    truth = generate(tmp_path / "run", SyntheticSpec(records=2000, producers=2, partitions=2,
                                                     inject={k: 1 for k in INJECTABLE}, seed=11))
    args, env = (["--spark-remote", users_server], {}) if how == "flag" else \
        ([], {"HARNESS_SPARK_REMOTE": users_server})
    proc = _verify(tmp_path / "run", tmp_path, args, env)
    assert proc.returncode == 1, proc.stdout + proc.stderr[-3000:]
    s = json.loads((tmp_path / "run" / "report" / "summary.json").read_text())
    assert s["anomalies"] == truth["anomalies"]
    assert s["config"]["spark"]["master"] == "local[1]"          # the user's server's
    assert not (tmp_path / "state" / "spark-connect" / "state.json").exists()   # none of ours


def test_a_remote_nobody_answers_at_is_said_with_exit_2(tmp_path):
    generate(tmp_path / "run", SyntheticSpec(records=200, partitions=1, seed=1))
    url = f"sc://127.0.0.1:{_free_port()}"
    t = time.monotonic()
    proc = _verify(tmp_path / "run", tmp_path, ["--spark-remote", url], {})
    assert proc.returncode == 2, proc.stdout + proc.stderr[-3000:]
    assert f"Spark Connect server {url}: cannot reach it" in proc.stderr
    assert time.monotonic() - t < 60


def test_a_classic_url_given_as_a_remote_is_refused(tmp_path):
    proc = _verify(tmp_path, tmp_path, ["--spark-remote", "spark://127.0.0.1:7077"], {})
    assert proc.returncode == 2 and "expected a Spark Connect URL, sc://host:port" in proc.stderr
