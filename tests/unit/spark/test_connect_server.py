"""The local Spark Connect server's life (spark_reports/connect_server.py), on real
servers: each test keeps its state in a directory of its own (HARNESS_STATE), so it
starts, stops and kills its own servers, never the one the other tests share."""
from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from dataclasses import asdict
from pathlib import Path

import pytest
from synthetic import INJECTABLE, SyntheticSpec, generate

from spark_reports import connect_server as cs

pytestmark = pytest.mark.spark
ROOT = Path(__file__).resolve().parents[3]


@pytest.fixture
def state(tmp_path, monkeypatch):
    """A state directory of the test's own; every server started in it is gone after."""
    monkeypatch.setenv("HARNESS_STATE", str(tmp_path / "state"))
    monkeypatch.delenv("HARNESS_SPARK_CONNECT_PORT", raising=False)
    yield tmp_path / "state" / "spark-connect"
    s = cs.read_state()
    if s is not None:
        cs._end(s)
    cs.reap_orphans()


def _gone(pid: int, start: str, within_s: float = 30) -> bool:
    deadline = time.monotonic() + within_s
    while time.monotonic() < deadline:
        if not cs.same_process(pid, start):
            return True
        time.sleep(0.2)
    return False


def _query(url: str) -> int:
    """A query on the server, in a process of its own (this process's pyspark stays as
    the other tests left it)."""
    code = ("import sys\nfrom pyspark.sql import SparkSession\n"
            "s = SparkSession.builder.remote(sys.argv[1]).create()\n"
            "print(s.range(7).count())\ns.stop()\n")
    out = subprocess.run([sys.executable, "-c", code, url], capture_output=True, text=True,
                         timeout=120, check=True)
    return int(out.stdout.split()[-1])


def test_start_reuse_orphan_stale_state_and_idle_stop(state, monkeypatch):
    first = cs.ensure_server()
    assert first.alive() and _query(first.url) == 7
    # listening on loopback only, asking for the token
    assert (state / "state.json").stat().st_mode & 0o077 == 0
    assert cs.ensure_server() == first                      # reused, not started again
    # its supervisor killed: the JVM is an orphan, and `harness gc` ends it
    os.kill(first.supervisor_pid, signal.SIGKILL)
    assert _gone(first.supervisor_pid, first.supervisor_start)
    assert cs.reap_orphans() == 1
    assert _gone(first.jvm_pid, first.jvm_start) and cs.read_state() is None
    # a stale state file (its processes long gone, its port someone else's) is replaced
    (state / "state.json").write_text(json.dumps({**asdict(first), "jvm_pid": 999_999_999,
                                                  "supervisor_pid": 999_999_998}))
    monkeypatch.setenv("HARNESS_SPARK_IDLE_TIMEOUT", "3s")
    second = cs.ensure_server()
    # a verify in progress keeps it up past its idle timeout; after it, it stops
    with cs.lease("a test"):
        assert second.jvm_pid != first.jvm_pid and _query(second.url) == 7
        time.sleep(cs.POLL_S * 3)
        assert second.alive()
        assert cs.status()["verifying"][0][1] == "a test"
    assert _gone(second.jvm_pid, second.jvm_start, within_s=60)
    assert _gone(second.supervisor_pid, second.supervisor_start)
    assert cs.read_state() is None and not list((state / "leases").iterdir())
    # its state directory removed (a temporary HARNESS_STATE cleaned up): nobody can find
    # it, so it stops rather than hold its memory until the idle timeout
    monkeypatch.setenv("HARNESS_SPARK_IDLE_TIMEOUT", "30m")
    third = cs.ensure_server()
    shutil.rmtree(state.parent)
    assert _gone(third.jvm_pid, third.jvm_start, within_s=60)
    assert _gone(third.supervisor_pid, third.supervisor_start)


def test_a_port_in_use_is_said_and_nothing_is_left(state, monkeypatch):
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        monkeypatch.setenv("HARNESS_SPARK_CONNECT_PORT", str(port))
        with pytest.raises(cs.ServerUnavailable, match=f"port {port} on 127.0.0.1 is in use"):
            cs.ensure_server()
    # its supervisor gave up before starting a JVM, and wrote no state
    assert cs.read_state() is None and not list((state / "leases").iterdir())


def test_a_server_killed_mid_verify_fails_it_with_exit_2_and_leaves_nothing(state, tmp_path):
    server = cs.ensure_server()
    run = tmp_path / "run"
    generate(run, SyntheticSpec(records=20000, producers=3, partitions=4,
                                inject={k: 2 for k in INJECTABLE}, seed=4))
    proc = subprocess.Popen([sys.executable, "-m", "harness.cli", "verify", str(run)], cwd=ROOT,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env={**os.environ, "PYTHONPATH": str(ROOT)})
    # in the middle of its Spark work: its first scratch view written (a fixed wait after
    # its lease was once too short on a loaded machine: the kill came before its session)
    deadline = time.monotonic() + 120
    while not (run / "report" / "_views").exists() and time.monotonic() < deadline:
        time.sleep(0.1)
    assert proc.poll() is None, proc.communicate()
    os.kill(server.jvm_pid, signal.SIGKILL)
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == 2, out + err[-3000:]
    assert "stopped during the verify" in err and str(server.jvm_pid) in err, err[-3000:]
    # nothing left behind: no server, no state, no lease, no scratch views
    assert _gone(server.supervisor_pid, server.supervisor_start)
    assert cs.read_state() is None and not list((state / "leases").iterdir())
    assert not (run / "report" / "_views").exists()


def test_session_slots_one_verify_each_kept_until_retired(state):
    server = cs.ServerState(1, "token", 0, "", 0, "", 0.0, 1.0, "", "")
    with cs.session_slot(server) as a, cs.session_slot(server) as b:
        assert (a.number, b.number) == (0, 1) and a.session_id != b.session_id
        first, second = a.session_id, b.session_id
    with cs.session_slot(server) as again:
        assert (again.number, again.session_id) == (0, first)   # the next verify's
        again.retire()
        assert again.session_id != first
    with cs.session_slot(server) as later:
        assert later.session_id not in (first, second)
    other = cs.ServerState(1, "another server's token", 0, "", 0, "", 0.0, 1.0, "", "")
    with cs.session_slot(other) as c:
        assert c.session_id != later.session_id


def test_a_verify_reuses_the_session_and_replaces_one_the_server_closed(state, tmp_path):
    server = cs.ensure_server()
    run = tmp_path / "run"
    generate(run, SyntheticSpec(records=3000, producers=3, partitions=4,
                                inject={k: 2 for k in INJECTABLE}, seed=5))

    def verify() -> dict:
        proc = subprocess.run([sys.executable, "-m", "harness.cli", "verify", str(run)],
                              cwd=ROOT, capture_output=True, text=True, timeout=600,
                              env={**os.environ, "PYTHONPATH": str(ROOT)})
        assert proc.returncode in (0, 1), proc.stderr[-3000:]
        summary = json.loads((run / "report" / "summary.json").read_text())
        return {k: v for k, v in summary.items()
                if k not in ("generated_at", "verify_seconds", "step_seconds")}

    first = verify()
    with cs.session_slot(server) as slot:
        kept = slot.session_id
    # the same session again (it holds the classes the first verify generated)
    assert verify() == first
    with cs.session_slot(server) as slot:
        assert slot.session_id == kept
    # the session released by someone else: the server refuses its id from then on
    code = ("import sys\nfrom pyspark.sql import SparkSession\n"
            "s = SparkSession.builder.remote(sys.argv[1]).create()\ns.range(1).count()\n"
            "s.stop()\n")
    subprocess.run([sys.executable, "-c", code, f"{server.url};session_id={kept}"],
                   capture_output=True, text=True, timeout=120, check=True)
    assert verify() == first
    with cs.session_slot(server) as slot:
        assert slot.session_id != kept


def test_on_two_cores_the_server_compiles_with_c1_and_leaves_big_histories(monkeypatch, capsys):
    from spark_reports import jvm_options, session
    monkeypatch.setattr(jvm_options, "machine_cores", lambda: 2)
    assert "-XX:TieredStopAtLevel=1" in jvm_options.server_java_options()
    assert session._server_serves(None) and session._server_serves(jvm_options.QUICK_JIT_MAX_ROWS)
    assert not session._server_serves(jvm_options.QUICK_JIT_MAX_ROWS + 1)
    assert "verifying in a Spark session of this process" in capsys.readouterr().out
    monkeypatch.setattr(jvm_options, "machine_cores", lambda: 8)
    assert "-XX:CompileThresholdScaling=3" in jvm_options.server_java_options()
    assert session._server_serves(10 ** 9)
