"""`cluster.security: sasl_ssl` on one of our own clusters in ZooKeeper mode (the KRaft
one is test_external_cluster.py's kept cluster): a leader kill under load from our
producer and consumer and Kafka's Java verifiable producer and consumer, all over
SCRAM-SHA-512 and TLS, judged as an unsecured run is; nothing left behind."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from clusters.docker_env import docker_client
from core.history import read_table

# Out of CI (-m slow, 89 s): SASL_SSL runs there on the external cluster's kept KRaft
# cluster (test_external_cluster.py), ZooKeeper mode in the ZooKeeper fault tests.
pytestmark = pytest.mark.slow

SCENARIO = """\
name: zk-sasl-ssl
seed: 5
cluster: {mode: zookeeper, version: "3.9", brokers: 3, security: sasl_ssl}
topics: [{name: t, partitions: 3, replication_factor: 3, configs: {min.insync.replicas: 2}}]
workload:
  duration_s: 20
  producers: [{name: p0, topic: t, rate: 500, acks: all, enable_idempotence: true}]
  consumers: [{group_id: g0, topics: [t]}]
  java_producers: [{prefix: 1, topic: t, max_messages: 6000, throughput: 500}]
  java_consumers: [{name: jc0, topic: t, group_id: jg0}]
faults:
  timeline:
    - {at: 4, fault: kill, target: {leader_of: {topic: t, partition: 0}}, hold: 6}
expect:
  include_defaults: true
"""


def test_a_zookeeper_mode_cluster_runs_secured(tmp_path):
    path = tmp_path / "zk-sasl-ssl.yaml"
    path.write_text(SCENARIO)
    runs = tmp_path / "runs"
    r = subprocess.run([sys.executable, "-m", "harness.cli", "run", str(path), "--runs-dir", str(runs), "--plain"],
                       capture_output=True, text=True, timeout=900)
    assert r.returncode == 0, (r.stdout + r.stderr)[-5000:]
    [run_dir] = [d for d in runs.iterdir() if d.is_dir()]
    phases = json.loads((run_dir / "phases.json").read_text())
    phases = phases if isinstance(phases, list) else phases["phases"]
    cluster_up = next(p for p in phases if p["name"] == "cluster-up")
    assert cluster_up["detail"]["security"] == "SASL_SSL"
    summary = json.loads((run_dir / "report" / "summary.json").read_text())
    assert summary["anomalies"]["lost"] == 0 and summary["anomalies"]["duplicate"] == 0, summary["anomalies"]
    faults = json.loads((run_dir / "faults.json").read_text())
    assert faults[0]["error"] is None and faults[0]["healed_s"]

    produced = read_table(run_dir, "produced").to_pandas()
    consumed = read_table(run_dir, "consumed").to_pandas()
    java = produced[produced.producer == "j1"]
    assert len(java) == 6000 and (java.status == "acked").sum() > 5000, java.status.value_counts()
    assert (produced[produced.producer == "p0"].status == "acked").sum() > 8000
    jc0 = consumed[consumed.consumer == "jc0"]
    assert len(jc0) > 5000 and jc0.record_id.str.startswith("j1-").any() and jc0.record_id.str.startswith("p0-").any()
    # the observer read the elections over the secured listener
    events = read_table(run_dir, "events").to_pylist()
    leaders = [e for e in events if e["kind"] == "observe" and e["name"] == "leader"]
    assert len(leaders) > 3
    # the brokers' logs: their listeners are SASL_SSL, and no client of ours failed to log in
    logs = "".join(p.read_text(errors="replace") for p in (run_dir / "logs").rglob("*") if p.is_file())
    assert "CLIENT:SASL_SSL" in logs, "the brokers' listener map is not in their logs"
    assert "Failed authentication" not in logs, "a harness client failed to authenticate"
    # nothing of the run is left: containers, networks, mounts (the certificates were there)
    client = docker_client()
    label = f"harness.run-id={run_dir.name}"
    assert not client.containers.list(all=True, filters={"label": label})
    assert not client.networks.list(filters={"label": label})
    assert run_dir.name not in Path("/proc/mounts").read_text()
