"""The external path for real, on one of our clusters left running (`harness cluster up`
with `cluster.security: sasl_ssl`): the bad inputs an external run refuses before it
starts (exit 2, the field named), then one SASL_SSL run whose exec faults call docker
(kill the leader, pause a follower), judged as the built-in kill and pause would be; the
password nowhere in the run dir or the output; the run's topics gone; an exec command that
fails mid-run judged and exit 2 naming it; a prefix some topic has refused; a user with only
prefixed ACLs on the run's names (no DESCRIBE on the cluster) whose run is judged and whose
report names what it could not see; `harness cluster down` leaves nothing."""
from __future__ import annotations

import json
import os
import secrets
import stat
import subprocess
import sys
import time
from pathlib import Path

import pytest
from confluent_kafka.admin import (
    AclBinding,
    AclOperation,
    AclPermissionType,
    AdminClient,
    NewTopic,
    ResourcePatternType,
    ResourceType,
    ScramCredentialInfo,
    ScramMechanism,
    UserScramCredentialUpsertion,
)

from clusters import client_config as cc
from clusters.docker_env import docker_client
from core.history import read_table

HARNESS = [sys.executable, "-m", "harness.cli"]
SPEC = "cluster: {mode: kraft-combined, version: '3.9', brokers: 3, security: sasl_ssl}\n"


def harness(*args: str, timeout: float = 600, env: dict | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([*HARNESS, *args], capture_output=True, text=True, timeout=timeout,
                          env={**os.environ, **(env or {})})


def scenario(info: dict, prefix: str, faults: str, config: str = "", keep: bool = False,
             duration_s: int = 40, listed: bool = True) -> str:
    nodes = "\n".join(f"      {name}: {{id: {n['id']}, role: {n['role']}, container: {n['container']}}}"
                      for name, n in info["nodes"].items()) if listed else "      {}"
    return f"""\
name: external-sasl-ssl
seed: 3
cluster:
  external:
    client_config_file: {info['client_config_file']}
{config}    topic_prefix: {prefix}
    keep_topics: {str(keep).lower()}
    connect_timeout_s: 10
    nodes:
{nodes}
topics: [{{name: t, partitions: 3, replication_factor: 3, configs: {{min.insync.replicas: 2}}}}]
workload:
  duration_s: {duration_s}
  producers: [{{topic: t, rate: 1000, acks: all, enable_idempotence: true}}]
  consumers: [{{group_id: g0, topics: [t]}}]
faults:
  timeline:
{faults}
"""


FAULTS = """\
    - at: 4
      fault: exec
      target: {leader_of: {topic: t, partition: 0}}
      params: {inject: "docker kill {container}", heal: "docker start {container}", timeout_s: 30}
      hold: 8
    - at: 20
      fault: exec
      target: {one_follower_of: {topic: t, partition: 0}}
      params: {inject: "docker pause {container} || (sleep 1 && docker pause {container})", heal: "docker unpause {container}"}
      hold: 6
"""


FAILING = """\
    - at: 2
      fault: exec
      target: {leader_of: {topic: t, partition: 0}}
      params: {inject: "docker kill {container}-gone", timeout_s: 10}
      hold: 2
"""


def refused(path: Path, runs: Path, field: str, *problems: str, env: dict | None = None) -> float:
    started = time.monotonic()
    r = harness("run", str(path), "--runs-dir", str(runs), "--plain", timeout=120, env=env)
    assert r.returncode == 2, r.stdout + r.stderr
    assert field in r.stderr and all(problem in r.stderr for problem in problems), r.stderr
    assert not runs.exists() or not any(runs.iterdir()), "a refused run made a run dir"
    return time.monotonic() - started


def admin_of(info: dict) -> AdminClient:
    props = cc.load_client_file(info["client_config_file"], "client file")
    return AdminClient({"bootstrap.servers": props["bootstrap.servers"], **cc.to_librdkafka(props, "f")})


def every_byte_under(path: Path) -> bytes:
    return b"".join(p.read_bytes() for p in path.rglob("*") if p.is_file())


@pytest.fixture
def kept_cluster():
    spec = Path(f"/tmp/kh-spec-{secrets.token_hex(3)}.yaml")
    spec.write_text(SPEC)
    up = harness("cluster", "up", str(spec), "--json", timeout=600)
    assert up.returncode == 0, up.stderr[-3000:]
    info = json.loads(up.stdout.strip().splitlines()[-1])
    try:
        yield info
    finally:
        down = harness("cluster", "down", info["id"], timeout=300)
        spec.unlink()
        assert down.returncode == 0, down.stderr
        client = docker_client()
        assert not client.containers.list(all=True, filters={"label": f"harness.run-id={info['id']}"})
        assert info["id"] not in Path("/proc/mounts").read_text()


def test_external_sasl_ssl_run_on_a_kept_cluster(kept_cluster, tmp_path):
    info = kept_cluster
    client_file = Path(info["client_config_file"])
    assert stat.S_IMODE(client_file.stat().st_mode) == 0o600
    password = cc.to_librdkafka(cc.load_client_file(str(client_file), "f"), "f")["sasl.password"]
    assert len(password) >= 16
    listed = json.loads(harness("cluster", "ls", "--json").stdout)
    assert any(c["id"] == info["id"] and c["security"] == "sasl_ssl" for c in listed)
    prefix = f"kh-it-{secrets.token_hex(3)}-"
    runs = tmp_path / "runs"

    # -- refused before anything starts ------------------------------------------------
    bad = tmp_path / "bad.yaml"
    bad.write_text(scenario(info, prefix, FAULTS, "    bootstrap_servers: 127.0.0.1:1\n"))
    seconds = refused(bad, runs, "cluster.external.bootstrap_servers", "no broker answered")
    assert seconds < 60
    bad.write_text(scenario(info, prefix, FAULTS, "    client_config: {sasl.password: '${env:KH_WRONG_PW}'}\n"))
    refused(bad, runs, "cluster.external.client_config", "refused the credentials",
            env={"KH_WRONG_PW": "not-the-password"})
    admin = admin_of(info)
    admin.alter_user_scram_credentials([UserScramCredentialUpsertion(
        "noperm", ScramCredentialInfo(ScramMechanism.SCRAM_SHA_512, 4096), b"noperm-pw")])["noperm"].result(30)
    bad.write_text(scenario(info, prefix, FAULTS, "    client_config: {sasl.username: noperm, "
                            "sasl.password: '${env:KH_NOPERM_PW}'}\n"))
    refused(bad, runs, "cluster.external.client_config", "noperm may not create topics",
            "grant noperm Create, Write, Read and Delete on topics and Read and Delete on groups whose "
            f"names start with {prefix!r}", env={"KH_NOPERM_PW": "noperm-pw"})
    bad.write_text(scenario(info, prefix, FAULTS.replace("docker kill", "dockr kill")))
    refused(bad, runs, "faults.timeline[0].params.inject", "'dockr' is not a program")
    bad.write_text(scenario(info, prefix, FAULTS.replace("docker unpause {container}", "docker unpause {pod}")))
    refused(bad, runs, "faults.timeline[1].params.heal", "{pod} is a key no node has")

    # -- the run ---------------------------------------------------------------------------
    good = tmp_path / "external.yaml"
    good.write_text(scenario(info, prefix, FAULTS))
    started = time.monotonic()
    r = harness("run", str(good), "--runs-dir", str(runs), "--plain", timeout=900)
    print(f"external run: {time.monotonic() - started:.0f} s")
    assert r.returncode == 0, (r.stdout + r.stderr)[-5000:]
    [run_dir] = [d for d in runs.iterdir() if d.is_dir()]
    summary = json.loads((run_dir / "report" / "summary.json").read_text())
    assert summary["anomalies"]["lost"] == 0 and summary["anomalies"]["duplicate"] == 0, summary["anomalies"]
    assert summary["counts"]["acked"] > 20_000 and summary["counts"]["consumed"] >= summary["counts"]["acked"]
    faults = json.loads((run_dir / "faults.json").read_text())
    assert [f["error"] for f in faults] == [None, None] and all(f["healed_s"] for f in faults)
    killed, paused = (f["detail"]["commands"][0] for f in faults)
    assert killed["command"].startswith("docker kill kh-") and killed["exit_code"] == 0
    assert paused["command"].startswith("docker pause kh-") and paused["exit_code"] == 0
    # each held about its hold (a selector that waited out the kill's aftermath shortened the pause)
    assert faults[0]["healed_s"] - faults[0]["inject_done_s"] > 6
    assert faults[1]["healed_s"] - faults[1]["inject_done_s"] > 4
    assert {r["name"] for r in summary["metrics"]["recovery"]} == {"exec"}
    # the observer (Admin API, DescribeQuorum over SASL_SSL) saw the elections and the quorum leader
    events = read_table(run_dir, "events").to_pylist()
    observed = [e for e in events if e["kind"] == "observe"]
    assert sum(e["name"] == "leader" for e in observed) > 3      # the 3 partitions' first, then elections
    assert any(e["name"] == "controller" and e["target"] for e in observed)
    assert not any(e["name"] == "metadata-limited" for e in observed)
    execs = [e for e in events if e["kind"] == "fault" and e["name"] == "exec"]
    assert len(execs) == 2
    # the kill hit t-0's leader and the pause one of its followers, as the observer saw them
    # then; the observer saw t-0's election within 15 s of the kill (not blind while it lasted)
    t0 = sorted((e for e in observed if e["name"] == "leader" and json.loads(e["detail"])["topic"] == prefix + "t"
                 and json.loads(e["detail"])["partition"] == 0), key=lambda e: e["ts_us"])
    (killed_at, killed_node), (paused_at, paused_node) = ((e["ts_us"], e["target"]) for e in execs)

    def leader_at(ts_us: int) -> str:
        return [e["target"] for e in t0 if e["ts_us"] <= ts_us][-1]
    assert leader_at(killed_at) == killed_node and leader_at(paused_at) != paused_node
    elected = next(e for e in t0 if e["ts_us"] > killed_at and e["target"] != killed_node)
    assert elected["ts_us"] - killed_at < 15e6, (elected, killed_at)

    # the password: nowhere under the run dir, nowhere in the output
    assert password.encode() not in every_byte_under(run_dir)
    assert password not in r.stdout + r.stderr

    # the run's topics and groups are gone; nothing else was touched
    topics = admin.list_topics(timeout=30).topics
    assert not [t for t in topics if t.startswith(prefix)], sorted(topics)
    groups = admin.list_consumer_groups().result(30).valid
    assert not [g.group_id for g in groups if g.group_id.startswith(prefix)]

    # an exec command that fails while the run goes on: the run is judged and reported, and
    # exits 2 naming the fault and what the command said
    failing = tmp_path / "failing.yaml"
    other = f"kh-it-{secrets.token_hex(3)}-"
    failing.write_text(scenario(info, other, FAILING, duration_s=8))
    r = harness("run", str(failing), "--runs-dir", str(tmp_path / "runs-failing"), "--plain", timeout=600)
    assert r.returncode == 2, (r.stdout + r.stderr)[-5000:]
    assert "faults.timeline[0].params: the exec command failed" in r.stderr, r.stderr
    assert "No such container" in r.stderr, r.stderr
    [failed_dir] = list((tmp_path / "runs-failing").iterdir())
    assert (failed_dir / "report" / "summary.json").exists()
    [fault] = json.loads((failed_dir / "faults.json").read_text())
    assert fault["error"] and fault["detail"]["commands"][0]["exit_code"] not in (0, None)
    assert not [t for t in admin.list_topics(timeout=30).topics if t.startswith(other)]

    # a prefix some topic has is refused (as a second run with a kept run's prefix is)
    admin.create_topics([NewTopic(f"{prefix}left-over", 1, 1)])[f"{prefix}left-over"].result(30)
    refused(good, tmp_path / "runs-again", "cluster.external.topic_prefix", "exist already")
    admin.delete_topics([f"{prefix}left-over"])[f"{prefix}left-over"].result(30)

    # -- a user with only what a run needs on its own names -------------------------------
    # prefixed ACLs on topics and groups with the run's prefix (the fewest operations a run
    # needs: docs/external.md), nothing on the cluster (so no DescribeQuorum): the run is made
    # and judged, its report names the controller it could not see, and the observer does not
    # make one up (KRaft's DescribeCluster, which needs no ACL, names a random broker)
    lprefix, lpassword = f"kh-it-{secrets.token_hex(3)}-", secrets.token_urlsafe(18)
    admin.alter_user_scram_credentials([UserScramCredentialUpsertion(
        "limited", ScramCredentialInfo(ScramMechanism.SCRAM_SHA_512, 4096), lpassword.encode())])["limited"].result(30)
    minimal = {ResourceType.TOPIC: (AclOperation.CREATE, AclOperation.WRITE, AclOperation.READ, AclOperation.DELETE),
               ResourceType.GROUP: (AclOperation.READ, AclOperation.DELETE)}      # docs/external.md's table
    acls = [AclBinding(kind, lprefix, ResourcePatternType.PREFIXED, "User:limited", "*", op, AclPermissionType.ALLOW)
            for kind, ops in minimal.items() for op in ops]
    for future in admin.create_acls(acls).values():
        future.result(30)
    limited = tmp_path / "limited.yaml"
    limited.write_text(scenario(info, lprefix, "    []\n", "    client_config: {sasl.username: limited, "
                                "sasl.password: '${env:KH_LIMITED_PW}'}\n", duration_s=8, listed=False))
    started = time.monotonic()
    r = harness("run", str(limited), "--runs-dir", str(tmp_path / "runs-limited"), "--plain", timeout=600,
                env={"KH_LIMITED_PW": lpassword})
    print(f"limited run: {time.monotonic() - started:.0f} s")
    assert r.returncode == 0, (r.stdout + r.stderr)[-5000:]
    [limited_dir] = list((tmp_path / "runs-limited").iterdir())
    summary = json.loads((limited_dir / "report" / "summary.json").read_text())
    assert summary["anomalies"]["lost"] == 0 and summary["counts"]["acked"] > 4_000, summary["counts"]
    assert summary["counts"]["consumed"] >= summary["counts"]["acked"]
    unseen = [p["text"] for p in summary["problems"] if p["kind"] == "observer"]
    print("limited run, what it could not see:", unseen)
    assert unseen == ["the observer could not see the controller: DescribeQuorum: CLUSTER_AUTHORIZATION_FAILED "
                      "(the credentials lack DESCRIBE on the cluster)"], summary["problems"]
    assert unseen[0] in r.stdout and unseen[0] in (limited_dir / "report" / "index.html").read_text()
    observed = [e for e in read_table(limited_dir, "events").to_pylist() if e["kind"] == "observe"]
    assert [e["target"] for e in observed if e["name"] == "metadata-limited"] == ["controller"]
    assert not [e for e in observed if e["name"] == "controller" and e["target"]], "a controller made up"
    assert sum(e["name"] == "leader" for e in observed) >= 3          # its own topics: seen
    assert lpassword.encode() not in every_byte_under(limited_dir) and lpassword not in r.stdout + r.stderr
    assert not [t for t in admin.list_topics(timeout=30).topics if t.startswith(lprefix)]
    assert not [g.group_id for g in admin.list_consumer_groups().result(30).valid if g.group_id.startswith(lprefix)]
