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



def _timeline(entry: str) -> str:
    return f"faults:\n  timeline:\n    - {entry}\n"


# (name, document, the line the message must name, words the message must contain)
SHARE = BASE.replace('"3.9"', '"4.3"') + "  share_groups:\n    - {group_id: q0, ack_mode: explicit}\n"
# a pipeline from t (keyed) to out; its item is line 18
PIPE = (BASE.replace("    - {name: p0, topic: t}", "    - {name: p0, topic: t, keys: fixed}")
        .replace("workload:", "  - {name: out, partitions: 3, replication_factor: 3}\nworkload:")
        + "  pipelines:\n    - {input_topic: t, output_topic: out}\n")
# a fault on the transaction coordinator of the pipeline's instance pl0i0; its item is line 21
PIPE_TXN_COORD = ("faults:\n  timeline:\n"
                  "    - {at: 5, fault: kill, target: {txn_coordinator_of: {producer: pl0i0}}, hold: 5}\n")
# a compacted writer on st; the topic is line 10, the item line 18
COMPACT = (BASE.replace("workload:", "  - {name: st, partitions: 3, replication_factor: 3}\nworkload:")
           + "  compacted:\n    - {topic: st, keys: 50}\n")

# a mirror of t to a 1-broker target; `mirror:` is line 16, its target 17, its topics 18
MIRROR = BASE + "  mirror:\n    target: {brokers: 1}\n    topics: [t]\n"

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
    ("share groups on 3.9", SHARE.replace('"4.3"', '"3.9"'), 17,
     ["workload.share_groups[0]", "need Kafka 4.1 or later", "cluster.version"]),
    ("share rate above 1", SHARE.replace("ack_mode: explicit", "ack_mode: explicit, release_rate: 1.5"),
     17, ["share_groups[0].release_rate", "1.5 is above 1"]),
    ("share rate in implicit mode", SHARE.replace("ack_mode: explicit", "reject_rate: 0.1"), 17,
     ["share_groups[0].reject_rate", "ack_mode: explicit"]),
    ("share unknown group config", SHARE.replace(
        "ack_mode: explicit", "ack_mode: explicit, configs: {share.lock.ms: 15000}"), 17,
     ["configs.share.lock.ms", "unknown share group config", "share.record.lock.duration.ms"]),
    ("share count limit before 4.3", SHARE.replace('"4.3"', '"4.2"').replace(
        "ack_mode: explicit", "configs: {share.delivery.count.limit: 3}"), 17,
     ["share.delivery.count.limit", "from Kafka 4.3", "group.share.delivery.count.limit"]),
    ("share id of a consumer group", SHARE.replace("group_id: q0", "group_id: g0"), 17,
     ["group_id", "also a consumer group's id"]),
    ("compacted tombstone rate above 1", COMPACT.replace("keys: 50", "keys: 50, tombstone_rate: 1.5"),
     18, ["workload.compacted[0].tombstone_rate", "above 1", "fraction from 0 to 1"]),
    ("compacted topic not compacted", COMPACT.replace(
        "replication_factor: 3}", "replication_factor: 3, configs: {cleanup.policy: delete}}"),
     10, ["topics[1].configs.cleanup.policy", "not compacted", "workload.compacted[0]"]),
    ("compacted lag above the cleaner wait", COMPACT.replace(
        "replication_factor: 3}", "replication_factor: 3, configs: {min.compaction.lag.ms: 600000}}"),
     10, ["topics[1].configs.min.compaction.lag.ms", "cleaner wait", "clean_timeout_s"]),
    ("compacted unknown topic", COMPACT.replace("topic: st,", "topic: sx,"), 18,
     ["workload.compacted[0].topic", "not among the scenario's topics"]),
    ("compacted topic a producer writes", COMPACT.replace("topic: st,", "topic: t,"), 18,
     ["workload.compacted[0].topic", "judged by neither family"]),
    ("compacted topic in drain.topics", COMPACT + "drain: {topics: [t, st]}\n", 18,
     ["workload.compacted[0].topic", "drain.topics", "cleaner has passed"]),
    ("pipeline streams protocol below 4.2", PIPE.replace(
        "output_topic: out}", "output_topic: out, client: streams, streams_protocol: streams}"),
     18, ["pipelines[0].streams_protocol", "KIP-1071", "3.9", "streams_protocol: classic"]),
    ("pipeline streams protocol on 4.3 clients, 3.9 brokers", PIPE.replace(
        "output_topic: out}", "output_topic: out, client: streams, streams_protocol: streams}")
     .replace("  duration_s: 30\n", "  duration_s: 30\n  clients_version: '4.3'\n"),
     19, ["pipelines[0].streams_protocol", "brokers 4.2+", "cluster.version"]),
    ("pipeline streams protocol for java", PIPE.replace(
        "output_topic: out}", "output_topic: out, client: java, streams_protocol: streams}"),
     18, ["pipelines[0].streams_protocol", "Kafka Streams setting", "client: streams"]),
    ("pipeline streams guarantee in client_config", PIPE.replace(
        "output_topic: out}", "output_topic: out, client: streams, "
        "client_config: {processing.guarantee: at_least_once}}"),
     18, ["pipelines[0].client_config.processing.guarantee", "Streams processor", "processing:"]),
    ("pipeline streams drained uncommitted", PIPE.replace(
        "output_topic: out}", "output_topic: out, client: streams}")
     + "drain: {isolation: read_uncommitted}\n", 19, ["drain.isolation", "aborted transactions"]),
    ("pipeline unknown client", PIPE.replace("output_topic: out}", "output_topic: out, client: jvm}"),
     18, ["pipelines[0].client", "'librdkafka', 'java' or 'streams'"]),
    ("pipeline java serializer", PIPE.replace(
        "output_topic: out}", "output_topic: out, client: java, "
        "client_config: {value.serializer: org.apache.kafka.common.serialization.StringSerializer}}"),
     18, ["pipelines[0].client_config.value.serializer", "set by the Java processor"]),
    ("pipeline java batch size", PIPE.replace(
        "output_topic: out}", "output_topic: out, client: java, client_config: {max.poll.records: 5}}"),
     18, ["pipelines[0].client_config.max.poll.records", "records_per_txn"]),
    ("pipeline java reads uncommitted", PIPE.replace(
        "output_topic: out}", "output_topic: out, client: java, "
        "client_config: {isolation.level: read_uncommitted}}"),
     18, ["pipelines[0].client_config.isolation.level", "set by the processor"]),
    ("txn coordinator of an at-least-once pipeline's instance", PIPE.replace(
        "output_topic: out}", "output_topic: out, processing: at_least_once}") + PIPE_TXN_COORD, 21,
     ["faults.timeline[0].target", "producer 'pl0i0' is not a transactional producer"]),
    ("pipeline output is its input", PIPE.replace("output_topic: out", "output_topic: t"), 18,
     ["pipelines[0].output_topic", "is the input topic"]),
    ("pipeline unknown output topic", PIPE.replace("output_topic: out", "output_topic: outs"), 18,
     ["pipelines[0].output_topic", "'outs' is not among the scenario's topics"]),
    ("pipeline input without producer", PIPE.replace("input_topic: t", "input_topic: out")
     .replace("output_topic: out", "output_topic: t"), 18,
     ["pipelines[0].input_topic", "no producer writes 'out'"]),
    ("pipeline count of unkeyed inputs", PIPE.replace("topic: t, keys: fixed}", "topic: t}"), 18,
     ["pipelines[0].state", "needs keyed inputs", "keys: fixed"]),
    ("pipeline not co-partitioned", PIPE.replace("{name: out, partitions: 3",
                                                 "{name: out, partitions: 2"), 18,
     ["pipelines[0].output_topic", "2 partitions", "same number of partitions"]),
    ("pipeline reads uncommitted", PIPE.replace(
        "output_topic: out}", "output_topic: out, client_config: {isolation.level: read_uncommitted}}"),
     18, ["client_config.isolation.level", "set by the processor"]),
    ("pipeline unknown processing", PIPE.replace("output_topic: out}",
                                                 "output_topic: out, processing: exactly-once}"),
     18, ["pipelines[0].processing", "exactly_once"]),
    ("pipeline drained uncommitted", PIPE + "drain: {isolation: read_uncommitted}\n", 19,
     ["drain.isolation", "aborted transactions"]),
    ("mirror unknown topic", MIRROR.replace("    topics: [t]\n", "    topics: [x]\n"), 18,
     ["workload.mirror.topics[0]", "not among the scenario's topics"]),
    ("mirror target too big", MIRROR.replace("{brokers: 1}", "{brokers: 4}"), 17,
     ["workload.mirror.target.brokers", "less than or equal to 3"]),
    ("mirror target version unknown", MIRROR.replace("{brokers: 1}", "{brokers: 1, version: '2.8'}"),
     17, ["workload.mirror.target.version", "2.8"]),
    ("mirror exactly_once not a boolean", MIRROR + "    exactly_once: maybe\n", 19,
     ["workload.mirror.exactly_once", "boolean"]),
    ("mirror unknown field", MIRROR + "    exactly: true\n", 19,
     ["workload.mirror.exactly", "check its spelling"]),
    ("mm2 fault without a mirror", BASE + _timeline("{at: 5, fault: mm2-kill, hold: 5}"), 18,
     ["faults.timeline[0].fault", "no workload.mirror"]),
    ("target-cluster fault without a mirror",
     BASE + _timeline("{at: 5, fault: kill, target: {random_broker: {}, cluster: target}}"), 18,
     ["faults.timeline[0].target.cluster", "no workload.mirror"]),
    ("unknown cluster on a selector",
     MIRROR + _timeline("{at: 5, fault: kill, target: {random_broker: {}, cluster: tgt}}"), 21,
     ["faults.timeline[0].target.cluster", "use one of source, target"]),
    ("a target selector naming a source topic", MIRROR + _timeline(
        "{at: 5, fault: kill, target: {leader_of: {topic: t, partition: 0}, cluster: target}}"),
     21, ["faults.timeline[0].target", "'t' is not among", "source.t"]),
    ("a source-only fault on the target", MIRROR + _timeline(
        "{at: 5, fault: disk-full, target: {random_broker: {}, cluster: target}}"), 21,
     ["faults.timeline[0].target.cluster", "source cluster only"]),
    ("an mm2 fault with a target", MIRROR + _timeline(
        "{at: 5, fault: mm2-pause, target: random_broker}"), 21,
     ["faults.timeline[0].target", "takes no target"]),
    ("a link partition without a mirror", BASE + _timeline(
        "{at: 5, fault: link-partition, hold: 5}"), 18,
     ["faults.timeline[0].fault", "link-partition", "no workload.mirror"]),
    ("a link latency without a mirror", BASE + _timeline(
        "{at: 5, fault: link-latency, hold: 5}"), 18,
     ["faults.timeline[0].fault", "link-latency", "no workload.mirror"]),
    ("a link partition of an unknown side", MIRROR + _timeline(
        "{at: 5, fault: link-partition, params: {side: both}, hold: 5}"), 21,
     ["faults.timeline[0].params.side", "'both' is not allowed", "'source'"]),
    ("a link latency without a link proxy", MIRROR + _timeline(
        "{at: 5, fault: link-latency, params: {latency_ms: 200}, hold: 5}"), 21,
     ["faults.timeline[0].fault", "link proxy", "link_proxy: true"]),
    ("a link cut inside an mm2-pause", MIRROR + _timeline(
        "{at: 5, fault: mm2-pause, hold: 3}") + "    - {at: 9, fault: link-partition, hold: 4}\n", 22,
     ["faults.timeline[1].at", "cut at 9 s", "timeline[0]'s mm2-pause (5 s to 8 s)", "after the pause's heal"]),
    ("a link heal inside an mm2-pause", MIRROR + _timeline(
        "{at: 2, fault: link-partition, hold: 6}") + "    - {at: 6, fault: mm2-pause}\n", 21,
     ["faults.timeline[0].hold", "heal at 8 s", "mm2-pause (6 s to heal-all)"]),
    ("a link latency of 0 ms", MIRROR + "    link_proxy: true\n" + _timeline(
        "{at: 5, fault: link-latency, params: {latency_ms: 0}, hold: 5}"), 22,
     ["faults.timeline[0].params.latency_ms", "greater than or equal to 1"]),
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


def test_the_compacted_document_is_valid(tmp_path, capsys):
    assert main(["run", str(_write(tmp_path, COMPACT)), "--dry-run"]) == 0
    out = capsys.readouterr().out
    # the cleaner's settings were set on the topic, and the final drain leaves it out
    assert "min.cleanable.dirty.ratio" in out and "cleanup.policy: compact" in out, out


def test_the_mirror_document_is_valid(tmp_path, capsys):
    assert main(["run", str(_write(tmp_path, MIRROR)), "--dry-run"]) == 0
    out = capsys.readouterr().out
    # the source's version resolved; MM2 at least once unless asked
    assert "source_version: 3.9." in out and "exactly_once: false" in out, out


def test_the_pipeline_document_is_valid(tmp_path):
    assert main(["run", str(_write(tmp_path, PIPE)), "--dry-run"]) == 0


@pytest.mark.parametrize("client", ["librdkafka", "java", "streams"])
def test_an_exactly_once_pipelines_instances_are_transactional_producers(tmp_path, capsys, client):
    text = PIPE.replace("output_topic: out}", f"output_topic: out, client: {client}}}") + PIPE_TXN_COORD
    assert main(["run", str(_write(tmp_path, text)), "--dry-run"]) == 0, capsys.readouterr().err


@pytest.mark.parametrize("extra", ["", "  clients_version: '3.6'\n"])
def test_a_java_pipeline_document_is_valid(tmp_path, capsys, extra):
    text = PIPE.replace("output_topic: out}", "output_topic: out, client: java, "
                        "processing: at_least_once}").replace("  duration_s: 30\n",
                                                              "  duration_s: 30\n" + extra)
    assert main(["run", str(_write(tmp_path, text)), "--dry-run"]) == 0, capsys.readouterr().err


@pytest.mark.parametrize("extra,protocol", [("", "classic"), ("", "streams"),
                                            ("  clients_version: '3.6'\n", "classic")])
def test_a_streams_pipeline_document_is_valid(tmp_path, capsys, extra, protocol):
    text = PIPE.replace("output_topic: out}", f"output_topic: out, client: streams, "
                        f"streams_protocol: {protocol}}}").replace("  duration_s: 30\n",
                                                                  "  duration_s: 30\n" + extra)
    if protocol == "streams":
        text = text.replace('"3.9"', '"4.2"')
    assert main(["run", str(_write(tmp_path, text)), "--dry-run"]) == 0, capsys.readouterr().err
    assert f"streams_protocol: {protocol}" in capsys.readouterr().out


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


def test_faults_on_mm2_and_on_the_target_cluster_are_valid_in_a_mirrored_run(tmp_path, capsys):
    doc = MIRROR + _timeline("{at: 5, fault: mm2-kill, hold: 5}") + (
        "    - {at: 6, fault: pause, target: {leader_of: {topic: source.t, partition: 2}, "
        "cluster: target}, hold: 2}\n"
        "    - {at: 9, fault: kill, target: {random_broker: {}, cluster: source}, hold: 2}\n"
        "    - {at: 12, fault: mm2-pause, hold: 2}\n")
    assert main(["run", str(_write(tmp_path, doc)), "--dry-run"]) == 0
    out = capsys.readouterr().out
    assert "cluster: target" in out and "mm2-pause" in out, out
