"""Malformed scenarios: each exits 2 from `harness run`, naming the file, the line and
the field, and nothing is started (no container, network or mount appears)."""
from __future__ import annotations

import subprocess
import textwrap

import pytest

from harness.cli import main
from harness.scenario import _display

BASE = """\
cluster:
  mode: kraft-combined
  version: "3.9"
  brokers: 3
topics:
  - name: t
    partitions: 3
    replication_factor: 3
    configs: {min.insync.replicas: 2}
workload:
  duration_s: 30
  producers:
    - {name: p0, topic: t}
  consumers:
    - {group_id: g0, topics: [t]}
"""

FAULT = "faults:\n  timeline:\n    - {at: 5, fault: kill, target: random_broker, hold: 5}\n"

# (name, document, the line the message must name, words the message must contain)
CASES = [
    ("yaml syntax", "cluster: {mode: kraft-combined\n", 2, ["not valid YAML"]),
    ("not a mapping", "- a\n- b\n", 1, ["must be a mapping"]),
    ("unknown section", BASE + "fautls: {}\n", 16, ["fautls", "did you mean 'faults'"]),
    ("unknown mode", BASE.replace("kraft-combined", "kraft-combo"), 2, ["cluster.mode", "kraft-isolated"]),
    ("unknown version", BASE.replace('"3.9"', '"2.8"'), 3, ["cluster.version", "unknown Kafka version"]),
    ("zookeeper on 4", BASE.replace("kraft-combined", "zookeeper").replace('"3.9"', '"4"'), 2,
     ["cluster.mode", "ZooKeeper mode does not exist"]),
    ("too many brokers", BASE.replace("brokers: 3", "brokers: 9"), 4, ["cluster.brokers", "1 to 5"]),
    ("brokers not int", BASE.replace("brokers: 3", "brokers: three"), 4, ["cluster.brokers", "integer"]),
    ("unknown cluster field", BASE.replace("  brokers: 3", "  brokers: 3\n  zookeeper: 1"), 5,
     ["cluster.zookeeper", "unknown field"]),
    ("reserved broker config", BASE.replace("  brokers: 3", "  brokers: 3\n  config: {node.id: 4}"), 5,
     ["cluster.config.node.id", "set by the harness"]),
    ("isolated with 2 controllers", BASE.replace("kraft-combined", "kraft-isolated")
     .replace("  brokers: 3", "  brokers: 3\n  controllers: 2"), 5, ["cluster.controllers", "1 or 3"]),
    ("toxiproxy mode", BASE.replace("  brokers: 3", "  brokers: 3\n  toxiproxy: yes-please"), 5,
     ["cluster.toxiproxy", "client+replication"]),
    ("rf above brokers", BASE.replace("replication_factor: 3", "replication_factor: 4"), 8,
     ["topics[0]", "replication_factor", "more than the 3 brokers"]),
    ("min isr above rf", BASE.replace("min.insync.replicas: 2", "min.insync.replicas: 4"), 9,
     ["topics[0].configs.min.insync.replicas", "more than the replication factor"]),
    ("zero partitions", BASE.replace("partitions: 3", "partitions: 0"), 7, ["topics[0]", "partitions"]),
    ("topics not a list", BASE.replace("topics:\n  - name: t", "topics:\n  name: t")
     .replace("    partitions: 3\n    replication_factor: 3\n    configs: {min.insync.replicas: 2}\n", ""),
     5, ["topics", "must be a list"]),
    ("duplicate topic", BASE.replace("topics:\n", "topics:\n  - {name: t}\n"), 7, ["defined twice"]),
    ("producer unknown topic", BASE.replace("{name: p0, topic: t}", "{name: p0, topic: u}"), 13,
     ["workload.producers[0].topic", "'u' is not among"]),
    ("acks 1 with idempotence", BASE.replace("{name: p0, topic: t}",
                                             "{name: p0, topic: t, acks: 1, enable_idempotence: true}"),
     13, ["workload.producers[0].enable_idempotence", "acks"]),
    ("bad acks", BASE.replace("{name: p0, topic: t}", "{name: p0, topic: t, acks: two}"), 13,
     ["workload.producers[0].acks", "'all'"]),
    ("producer unknown field", BASE.replace("{name: p0, topic: t}", "{name: p0, topic: t, speed: 3}"), 13,
     ["workload.producers[0].speed", "known fields"]),
    ("bad producer name", BASE.replace("{name: p0, topic: t}", "{name: p-0, topic: t}"), 13,
     ["workload.producers[0].name"]),
    ("duplicate producer", BASE.replace("    - {name: p0, topic: t}\n",
                                        "    - {name: p0, topic: t}\n    - {name: p0, topic: t}\n"), 14,
     ["workload.producers[1].name", "used twice"]),
    ("producer named as a restart", BASE.replace("    - {name: p0, topic: t}\n",
                                                 "    - {name: p0, topic: t, churn: {}}\n"
                                                 "    - {name: p0.1, topic: t}\n"), 14,
     ["workload.producers[1].name", "churn restarts it"]),
    ("in flight with idempotence", BASE.replace("{name: p0, topic: t}", "{name: p0, topic: t, max_in_flight: 9}"),
     13, ["workload.producers[0].max_in_flight"]),
    ("consumer unknown topic", BASE.replace("topics: [t]}", "topics: [x]}"), 15,
     ["workload.consumers[0].topics[0]", "'x' is not among"]),
    ("consumer bad commit", BASE.replace("topics: [t]}", "topics: [t], commit: sometimes}"), 15,
     ["workload.consumers[0].commit", "after-processing"]),
    ("no producer", BASE.replace("  producers:\n    - {name: p0, topic: t}\n", ""), 10,
     ["workload.producers", "no producer"]),
    ("unknown workload field", BASE.replace("  duration_s: 30", "  duration_s: 30\n  speed: 5"), 12,
     ["workload.speed", "unknown field"]),
    ("unknown fault", BASE + FAULT.replace("fault: kill", "fault: kil"), 18,
     ["faults.timeline[0].fault", "did you mean 'kill'"]),
    ("unknown selector", BASE + FAULT.replace("target: random_broker", "target: {leadr_of: {topic: t}}"), 18,
     ["faults.timeline[0]", "leadr_of", "leader_of"]),
    ("selector unknown topic", BASE + FAULT.replace("target: random_broker",
                                                    "target: {leader_of: {topic: u, partition: 0}}"), 18,
     ["faults.timeline[0].target", "'u' is not among"]),
    ("selector partition out of range", BASE + FAULT.replace(
        "target: random_broker", "target: {leader_of: {topic: t, partition: 7}}"), 18,
     ["faults.timeline[0].target", "no partition 7"]),
    ("fault after the workload", BASE + FAULT.replace("at: 5", "at: 45"), 18,
     ["faults.timeline[0].at", "outside the workload"]),
    ("zookeeper fault on kraft", BASE + FAULT.replace("fault: kill", "fault: zk-session-expiry"), 18,
     ["faults.timeline[0].fault", "ZooKeeper-mode cluster"]),
    ("toxic without toxiproxy", BASE + FAULT.replace("fault: kill", "fault: toxic")
     .replace("hold: 5}", "hold: 5, params: {type: latency, latency_ms: 100}}"), 18,
     ["faults.timeline[0].fault", "toxiproxy"]),
    ("bad fault param", BASE + FAULT.replace("fault: kill", "fault: partition")
     .replace("hold: 5}", "hold: 5, params: {shape: donut}}"), 18, ["faults.timeline[0]", "shape"]),
    ("negative hold", BASE + FAULT.replace("hold: 5", "hold: -1"), 18, ["faults.timeline[0].hold", "negative"]),
    ("zookeeper upgraded to 4", BASE.replace("kraft-combined", "zookeeper") + FAULT.replace(
        "fault: kill, target: random_broker, hold: 5", "fault: rolling-upgrade, params: {to_version: '4'}"),
     18, ["faults.timeline[0].params.to_version", "no ZooKeeper mode"]),
    ("unknown nemesis preset", BASE + "faults:\n  nemesis: {presets: [kill-leadr]}\n", 17,
     ["faults.nemesis.presets[0]", "kill-leader"]),
    ("nemesis longer than the workload", BASE + "faults:\n  nemesis: {presets: [kill-leader], duration_s: 99}\n",
     17, ["faults.nemesis.duration_s", "longer than the workload"]),
    ("bad expectation", BASE + "expect:\n  - lost === 0\n", 17, ["expect", "cannot parse"]),
    ("unknown expectation metric", BASE + "expect:\n  - lots == 0\n", 17, ["expect", "unknown metric"]),
    ("drain unknown field", BASE + "drain: {timeout: 5}\n", 16, ["drain.timeout"]),
]


def _write(tmp_path, text: str):
    path = tmp_path / "scenario.yaml"
    path.write_text(text)
    return path


def _docker_state() -> tuple[str, str, str] | None:
    try:
        ps = subprocess.run(["docker", "ps", "-aq"], capture_output=True, text=True, timeout=20)
        nets = subprocess.run(["docker", "network", "ls", "-q"], capture_output=True, text=True,
                              timeout=20)
    except (OSError, subprocess.TimeoutExpired):
        return None
    if ps.returncode != 0:
        return None
    mounts = "\n".join(line for line in open("/proc/mounts") if "kafka-harness" in line)
    return ps.stdout, nets.stdout, mounts


def test_there_are_at_least_30_cases():
    assert len(CASES) >= 30
    assert len({name for name, *_ in CASES}) == len(CASES)


@pytest.mark.parametrize("name,text,line,words", CASES, ids=[c[0] for c in CASES])
def test_malformed_scenario_exits_2_naming_file_line_and_field(tmp_path, capsys, name, text, line, words):
    path = _write(tmp_path, textwrap.dedent(text))
    before = _docker_state()
    code = main(["run", str(path), "--runs-dir", str(tmp_path / "runs")])
    err = capsys.readouterr().err
    assert code == 2, err
    shown = _display(path)               # relative to the current directory when below it
    assert f"{shown}:{line} " in err or f"{shown}:{line}:" in err, err
    for word in words:
        assert word in err, err
    assert not (tmp_path / "runs").exists()            # no run dir: nothing started
    if before is not None:
        assert _docker_state() == before


def test_the_base_document_is_valid(tmp_path):
    assert main(["run", str(_write(tmp_path, BASE)), "--dry-run"]) == 0


@pytest.mark.parametrize("how", ["file", "set"])
def test_toxiproxy_off_is_read_as_off_although_yaml_reads_it_as_false(tmp_path, capsys, how):
    # YAML 1.1 reads a bare `off` as False: the value the user typed must still mean off.
    text = BASE.replace("  brokers: 3", "  brokers: 3\n  toxiproxy: off") if how == "file" else BASE
    extra = ["--set", "cluster.toxiproxy=off"] if how == "set" else []
    code = main(["run", str(_write(tmp_path, text)), "--dry-run", *extra])
    out, err = capsys.readouterr()
    assert code == 0, err
    assert "toxiproxy: 'off'" in out or "toxiproxy: off" in out, out


def test_toxiproxy_true_is_refused_naming_the_modes_it_could_mean(tmp_path, capsys):
    path = _write(tmp_path, BASE.replace("  brokers: 3", "  brokers: 3\n  toxiproxy: yes"))
    assert main(["run", str(path), "--dry-run"]) == 2
    err = capsys.readouterr().err
    assert "cluster.toxiproxy" in err and ":5 " in err, err
    assert "client+replication" in err and "use one of off" not in err, err
