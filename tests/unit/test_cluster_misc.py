import os
import subprocess
import sys

from clusters.labels import OWNER_PID, OWNER_START, owner_alive, owner_labels, run_labels
from clusters.metrics import parse_prometheus
from harness.cli.doctor import Check, run_doctor


def test_parse_prometheus():
    text = ('# HELP x\nkafka_controller_kafkacontroller_activecontrollercount 1.0\n'
            'kafka_server_replicamanager_underreplicatedpartitions 0.0\n'
            'jvm_memory_bytes_used{area="heap",} 1.5E7\nbad line\nnan_metric NaN\n')
    m = parse_prometheus(text)
    assert m["kafka_controller_kafkacontroller_activecontrollercount"] == 1.0
    assert m['jvm_memory_bytes_used{area="heap",}'] == 1.5e7
    assert "nan_metric" not in m


def test_owner_liveness():
    assert owner_alive(owner_labels())
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    dead = {**owner_labels(), OWNER_PID: str(child.pid)}
    assert not owner_alive(dead)
    recycled = {**owner_labels(), OWNER_START: "1"}   # same pid, other start time
    assert not owner_alive(recycled)
    assert run_labels("r1", role="broker")["harness.role"] == "broker"
    assert run_labels("r1")["harness.owner-pid"] == str(os.getpid())


def test_doctor_exit_codes_and_fixes(capsys):
    assert run_doctor(checks=lambda: [Check("a", True, "fine")]) == 0
    assert run_doctor(checks=lambda: [Check("docker engine", False, "down", "start dockerd")]) == 1
    out = capsys.readouterr().out
    assert "MISSING" in out and "fix: start dockerd" in out


def test_kraft_cluster_ids_never_look_like_options():
    from clusters.docker_cluster import kraft_cluster_id
    ids = [kraft_cluster_id() for _ in range(3000)]
    assert all(len(i) == 22 and not i.startswith("-") for i in ids)
    assert len(set(ids)) == len(ids)
