"""External clusters without one: secrets, client settings files, the external spec, the
scenario renamed under a run's prefix, and what is refused before anything starts."""
import json
from pathlib import Path

import pytest
import yaml

from clusters import client_config as cc
from clusters.external_spec import ExternalSpec
from clusters.secrets import HIDDEN, Redactor, redacted, resolve, secret_values
from core.errors import SpecError
from harness.cli import main
from harness.run.external import check_programs, for_run, groups_of, plan_lines, watch
from harness.scenario import load_scenario

EXTERNAL = """\
name: ext
cluster:
  external:
    bootstrap_servers: localhost:1
    client_config:
      security.protocol: SASL_SSL
      sasl.mechanism: SCRAM-SHA-512
      sasl.username: chaos
      sasl.password: ${env:KH_TEST_PW}
    nodes:
      kafka-0: {id: 0, pod: my-cluster-kafka-0}
      kafka-1: {id: 1, pod: my-cluster-kafka-1}
      kafka-2: {id: 2, pod: my-cluster-kafka-2}
topics: [{name: t, partitions: 3, replication_factor: 3, configs: {min.insync.replicas: 2}}]
workload:
  duration_s: 30
  producers: [{topic: t, rate: 100}]
  consumers: [{group_id: g0, topics: [t]}]
faults:
  timeline:
    - at: 5
      fault: exec
      target: {leader_of: {topic: t, partition: 0}}
      params: {inject: "kubectl -n kafka delete pod {pod} --wait=false", heal: "echo {node} {id}"}
      hold: 8
"""


def write(tmp_path, text, name="ext.yaml"):
    path = tmp_path / name
    path.write_text(text)
    return str(path)


# -- secrets ---------------------------------------------------------------------------

def test_references_resolve_from_the_environment_and_files(tmp_path, monkeypatch):
    monkeypatch.setenv("KH_TEST_PW", "s3cret-pw")
    (tmp_path / "key").write_text("file-secret\n")
    raw = {"sasl.password": "${env:KH_TEST_PW}", "ssl.key.password": f"${{file:{tmp_path}/key}}",
           "sasl.jaas.config": 'x required username="u" password="${env:KH_TEST_PW}";'}
    out = resolve(raw, "cluster.external.client_config")
    assert out["sasl.password"] == "s3cret-pw" and out["ssl.key.password"] == "file-secret"
    assert 'password="s3cret-pw"' in out["sasl.jaas.config"]
    assert secret_values(raw, out) >= {"s3cret-pw", "file-secret"}


def test_an_unset_variable_is_named_with_its_field_and_no_value(monkeypatch):
    monkeypatch.delenv("KH_NOT_SET", raising=False)
    with pytest.raises(SpecError) as e:
        resolve({"sasl.password": "${env:KH_NOT_SET}"}, "cluster.external.client_config")
    assert e.value.field == "cluster.external.client_config.sasl.password"
    assert "KH_NOT_SET is not set" in str(e.value)


def test_written_settings_keep_references_and_hide_literal_secrets():
    out = redacted({"sasl.password": "hunter22", "sasl.username": "u", "ssl.key.password": "${env:K}",
                    "sasl.jaas.config": 'm required username="u" password="hunter22";'})
    assert out == {"sasl.password": HIDDEN, "sasl.username": "u", "ssl.key.password": "${env:K}",
                   "sasl.jaas.config": HIDDEN}
    assert Redactor({"hunter22"})("auth failed for hunter22!") == f"auth failed for {HIDDEN}!"


# -- client settings files -------------------------------------------------------------

def test_a_java_client_properties_becomes_librdkafka_settings(tmp_path):
    path = write(tmp_path, "# from harness cluster up\nbootstrap.servers=10.0.0.2:9092\n"
                 "security.protocol=SASL_SSL\nsasl.mechanism=SCRAM-SHA-512\n"
                 'sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required \\\n'
                 '  username="admin" password="pw\\"x";\n'
                 "ssl.truststore.type=PEM\nssl.truststore.location=/ca.pem\n", "client.properties")
    props = cc.load_client_file(path, "f")
    assert props["bootstrap.servers"] == "10.0.0.2:9092"
    assert cc.to_librdkafka(props, "f") == {
        "security.protocol": "SASL_SSL", "sasl.mechanism": "SCRAM-SHA-512", "sasl.username": "admin",
        "sasl.password": 'pw"x', "ssl.ca.location": "/ca.pem"}


def test_a_json_settings_file_and_refusals(tmp_path):
    path = write(tmp_path, json.dumps({"security.protocol": "SSL", "ssl.endpoint.identification.algorithm": ""}),
                 "c.json")
    assert cc.to_librdkafka(cc.load_client_file(path, "f"), "f") == {
        "security.protocol": "SSL", "ssl.endpoint.identification.algorithm": "none"}
    with pytest.raises(SpecError, match="JKS truststore cannot be read.*keytool -exportcert"):
        cc.to_librdkafka({"ssl.truststore.location": "/t.jks"}, "f")
    with pytest.raises(SpecError) as e:
        cc.to_librdkafka({"acks": "all"}, "cluster.external.client_config")
    assert e.value.field == "cluster.external.client_config.acks"


def test_java_tools_get_the_password_by_reference():
    props = cc.java_properties("b:9092", {"security.protocol": "SASL_SSL", "sasl.mechanism": "SCRAM-SHA-512",
                                          "sasl.username": "admin", "sasl.password": "pw",
                                          "ssl.ca.location": "/host/ca.pem"},
                               password_ref="${env:PW}", ca_path="/etc/kafka/secrets/ca.pem")
    assert 'password="${env:PW}"' in props["sasl.jaas.config"] and "pw\"" not in props["sasl.jaas.config"]
    assert props["config.providers.env.class"].endswith("EnvVarConfigProvider")
    assert props["ssl.truststore.location"] == "/etc/kafka/secrets/ca.pem"


# -- the scenario ------------------------------------------------------------------------

def test_an_external_scenario_loads_and_keeps_its_references(tmp_path):
    s = load_scenario(write(tmp_path, EXTERNAL))
    ext = s.cluster.external
    assert ext.bootstrap_servers == "localhost:1" and [n.name for n in ext.nodes] == ["kafka-0", "kafka-1", "kafka-2"]
    assert "${env:KH_TEST_PW}" in s.to_yaml() and ext.where("bootstrap_servers").endswith(
        "ext.yaml:4 cluster.external.bootstrap_servers")


def test_the_run_renames_topics_groups_and_targets(tmp_path):
    s = for_run(load_scenario(write(tmp_path, EXTERNAL)), "R1")
    assert [t.name for t in s.topics] == ["harness-R1-t"]
    assert s.workload.producers[0].topic == "harness-R1-t"
    assert s.workload.consumers[0].group_id == "harness-R1-g0"
    assert s.drain.topics == ("harness-R1-t",) and s.drain.client_config["group.id"] == "harness-R1-drain"
    assert s.faults.timeline[0].target == {"leader_of": {"topic": "harness-R1-t", "partition": 0}}
    assert s.faults.timeline[0].resolved.selector.__name__ == "leader_of('harness-R1-t', 0)"
    assert groups_of(s) == ["harness-R1-g0", "harness-R1-drain"]


def test_dry_run_prints_each_command_per_node_it_could_pick(tmp_path, capsys):
    assert main(["run", write(tmp_path, EXTERNAL), "--dry-run"]) == 0
    out = capsys.readouterr().out
    assert "#     on kafka-1: inject: kubectl -n kafka delete pod my-cluster-kafka-1 --wait=false" in out
    assert "#     on kafka-2: heal:   echo kafka-2 2" in out
    assert plan_lines(load_scenario(write(tmp_path, EXTERNAL)))[0].startswith("timeline[0] exec at 5 s")


def test_watch_leaves_the_faults_out(tmp_path):
    s, dropped = watch(write(tmp_path, EXTERNAL))
    assert dropped == 1 and s.faults.timeline == ()


def test_watch_with_a_shorter_load_drops_the_faults_before_their_times_are_checked(
        tmp_path, capsys, monkeypatch):
    # docs/kubernetes.md: `--watch --set workload.duration_s=60` on a recipe whose faults
    # start at 30 s and 150 s; without faults there is nothing to place inside the 60 s.
    monkeypatch.setenv("KAFKA_PASSWORD", "x")
    recipe = Path(__file__).parents[2] / "docs/recipes/strimzi-delete-pod.yaml"
    code = main(["run", str(recipe), "--watch", "--set", "workload.duration_s=60", "--dry-run"])
    out, err = capsys.readouterr()
    assert code == 0, err
    assert "2 planned fault(s) left out" in err and "the load runs 60 s" in err
    assert yaml.safe_load(out)["faults"]["timeline"] == []      # stdout: a valid scenario
    s, _ = watch(str(recipe), ("workload.duration_s=60",))
    assert s.faults.recovery_timeout_s == 600           # the faults' other settings are kept


def test_watch_still_refuses_a_broken_scenario(tmp_path, capsys):
    broken = EXTERNAL.replace("duration_s: 30", "duration_s: -3")
    assert main(["run", write(tmp_path, broken), "--watch", "--dry-run"]) == 2
    assert "duration_s" in capsys.readouterr().err


@pytest.mark.parametrize("old, new, field", [
    ('heal: "echo {node} {id}"', 'heal: "echo {broker}"', "faults.timeline[0].params.heal"),
    ('fault: exec\n      target: {leader_of: {topic: t, partition: 0}}\n      params: {inject: "kubectl -n kafka '
     'delete pod {pod} --wait=false", heal: "echo {node} {id}"}', "fault: kill\n      target: random_broker",
     "faults.timeline[0].fault"),
    ("bootstrap_servers: localhost:1", "bootstrap_servers: localhost", "cluster.external.bootstrap_servers"),
    ("sasl.username: chaos", "sasl.username: chaos\n      acks: all", "cluster.external.client_config.acks"),
    ("kafka-2: {id: 2,", "kafka-2: {id: 1,", "cluster.external.nodes.kafka-2.id"),
    ("  consumers:", "  java_producers: [{topic: t}]\n  consumers:", "workload.java_producers"),
    ("    nodes:", "    mode: kraft-combined\n    nodes:", "cluster.external.mode"),
    ("topics: [{name: t,", "topics: [{name: s}, {name: t,",
     "workload.compacted"),
])
def test_bad_external_input_names_its_field(tmp_path, capsys, old, new, field):
    assert old in EXTERNAL
    text = EXTERNAL.replace(old, new)
    if field == "workload.compacted":       # its cleaner wait needs docker exec
        text = text.replace("  consumers:", "  compacted: [{topic: s}]\n  consumers:")
    code = main(["run", write(tmp_path, text), "--dry-run"])
    err = capsys.readouterr().err
    assert code == 2 and field in err and "ext.yaml:" in err, err


@pytest.mark.parametrize("client,what", [("java", "Java"), ("streams", "Kafka Streams")])
def test_a_java_or_streams_pipeline_is_refused_on_an_external_cluster(tmp_path, capsys, client, what):
    text = EXTERNAL.replace(
        "topics: [{name: t,", "topics: [{name: u, partitions: 3, replication_factor: 3}, {name: t,"
    ).replace("  consumers: [{group_id: g0, topics: [t]}]",
              f"  pipelines: [{{input_topic: t, output_topic: u, state: none, client: {client}}}]")
    code = main(["run", write(tmp_path, text), "--dry-run"])
    err = capsys.readouterr().err
    assert code == 2 and "workload.pipelines[0].client" in err and "ext.yaml:" in err, err
    assert f"the {what} processor runs in a container" in err and "client: librdkafka" in err, err
    assert main(["run", write(tmp_path, text.replace(f", client: {client}", "")), "--dry-run"]) == 0


def test_a_program_that_is_not_here_is_refused_before_anything_starts(tmp_path):
    s = load_scenario(write(tmp_path, EXTERNAL.replace("kubectl -n kafka", "kubectl-nowhere -n kafka")))
    with pytest.raises(SpecError) as e:
        check_programs(s)
    assert "faults.timeline[0].params.inject" in e.value.field and "kubectl-nowhere" in e.value.problem


def test_external_spec_refuses_a_bad_prefix_and_reads_no_file():
    with pytest.raises(SpecError, match="topic_prefix"):
        ExternalSpec.from_dict({"bootstrap_servers": "a:1", "topic_prefix": "bad prefix"})
    spec = ExternalSpec.from_dict({"client_config_file": "/nonexistent/client.properties"})
    with pytest.raises(SpecError, match="cannot read /nonexistent"):
        spec.settings()


RECIPES = Path(__file__).resolve().parents[2] / "docs" / "recipes"


@pytest.mark.parametrize("recipe, expected", [
    ("strimzi-delete-pod.yaml", "#     on kafka-1: inject: kubectl -n kafka delete pod my-cluster-kafka-1 --wait=false"),
    ("strimzi-delete-pod.yaml", "kubectl -n kafka exec my-cluster-kafka-2 -c kafka -- bash -c 'for p in /proc/[0-9]*; "
                                "do grep -qs kafka.Kafka $p/cmdline && kill -STOP ${p#/proc/}; done'"),
    ("chaos-mesh-partition.yaml", "#         selector: {pods: {kafka: [my-cluster-kafka-0]}}"),
    ("chaos-mesh-partition.yaml", "#     on kafka-0: heal:   kubectl -n kafka delete networkchaos kh-partition-<run-id>"),
    ("systemd-ssh.yaml", "#     on kafka-3: inject: ssh kafka-3.staging.example sudo systemctl kill --signal=SIGKILL"),
    ("docker.yaml", "#     on kafka-2: heal:   docker unpause kh-<cluster id>-kafka-kafka-2"),
])
def test_each_recipes_command_plan(recipe, expected, capsys):
    """docs/recipes: each loads, and --dry-run prints its commands filled in per node (no
    secret, no cluster and no kubectl needed)."""
    assert main(["run", str(RECIPES / recipe), "--dry-run"]) == 0
    out = capsys.readouterr().out
    assert expected in out, out
    yaml.safe_load(out)                       # still a scenario document: the plan is comments


def test_the_report_lists_every_change_the_observer_saw():
    """--watch: no faults, so the leader/ISR/controller changes are the story (open)."""
    from spark_reports.report_html import _changes
    obs = [{"ts_us": 1_000_000, "name": "leader", "topic": "t", "partition": 0, "leader": 2, "target": "kafka-2"},
           {"ts_us": 2_500_000, "name": "isr", "topic": "t", "partition": 0, "isr": [2, 3], "fault_id": "f1"},
           {"ts_us": 3_000_000, "name": "controller", "target": "kafka-1"},
           {"ts_us": 3_000_000, "name": "metadata-available"}]
    html = _changes(obs, {2: "kafka-2", 3: "kafka-3"}, {"f1": "timeline[0] exec"}, 0, opened=True)
    assert html.startswith("<details open>") and "change the observer saw: 3<" in html
    for cell in ("+1.000 s", "t-0", "kafka-2, kafka-3", "timeline[0] exec", "kafka-1"):
        assert cell in html, cell


def test_cluster_up_takes_a_file_with_only_a_cluster(tmp_path):
    from harness.cli.cluster import load_cluster_scenario
    spec = write(tmp_path, "cluster: {mode: kraft-combined, version: '3.9', brokers: 3, security: sasl_ssl}\n")
    s = load_cluster_scenario(spec, ("cluster.brokers=5",))
    assert (s.cluster.security, s.cluster.brokers) == ("sasl_ssl", 5)
    assert load_cluster_scenario("quick").cluster == load_scenario("quick").cluster
    bad = write(tmp_path, "cluster: {mode: kraft-combined, brokers: 9}\n", "bad.yaml")
    with pytest.raises(SpecError, match=r"bad.yaml:1 cluster.brokers"):
        load_cluster_scenario(bad)
    with pytest.raises(SpecError, match="workload.producers"):   # a scenario is still a whole scenario
        load_cluster_scenario(write(tmp_path, "cluster: {brokers: 3}\ntopics: [{name: t}]\n", "s.yaml"))


def test_what_the_credentials_hide_is_named_once_in_the_report(tmp_path):
    """An external cluster's limits (e.g. no DESCRIBE on the cluster: no DescribeQuorum) are
    one `metadata-limited` observation each, which the report's "what else went wrong" names."""
    from clusters.observer import MetadataObserver
    from core.history import EventLog, read_table
    from core.timeline import Observation, Timeline
    from spark_reports.problems import find_problems
    from spark_reports.storage import RunLocation

    events = EventLog(tmp_path, "R1", writer_name="t")
    observer = MetadataObserver(cluster=None, events=events)
    why = "DescribeQuorum: CLUSTER_AUTHORIZATION_FAILED (the credentials lack DESCRIBE on the cluster)"
    observer._say_limits({"controller": why})
    observer._say_limits({"controller": why})
    events.close()
    [row] = [e for e in read_table(tmp_path, "events").to_pylist() if e["name"] == "metadata-limited"]
    assert row["target"] == "controller" and json.loads(row["detail"])["reason"] == why
    tl = Timeline(observations=[Observation(row["ts_us"], row["name"], row["target"], None, None, None, None,
                                            json.loads(row["detail"]))])
    [problem] = find_problems(tl, RunLocation.of(str(tmp_path)))
    assert problem["kind"] == "observer"
    assert problem["text"] == f"the observer could not see the controller: {why}"


def test_broker_log_levels_a_broker_refused_are_named_among_what_else_went_wrong(tmp_path):
    """A run stored when cluster.log_levels went through ConfigCommand at run time (before
    they were set at start): a broker that refused (an unknown logger, a tool not found)
    left the evidence out of its log, and re-verifying that run still says so."""
    from core.timeline import Timeline
    from spark_reports.problems import find_problems
    from spark_reports.storage import RunLocation

    why = "Invalid broker logger(s): kafka.coordinator.transaction"
    said = f"log4j:WARN Please initialize the log4j system properly.\n{why}\n"
    (tmp_path / "phases.json").write_text(json.dumps([
        {"name": "topics", "outcome": "ok", "start_us": 1, "end_us": 2,
         "detail": {"log_levels": {"kafka-1": "ok", "kafka-2": said, "kafka-3": said}}}]))
    [problem] = find_problems(Timeline(observations=[]), RunLocation.of(str(tmp_path)))
    assert problem["kind"] == "log-levels"
    assert problem["text"] == f"cluster.log_levels not set on kafka-2, kafka-3: {why}"
    (tmp_path / "phases.json").write_text(json.dumps([
        {"name": "topics", "outcome": "ok", "detail": {"log_levels": {"kafka-1": "ok"}}}]))
    assert find_problems(Timeline(observations=[]), RunLocation.of(str(tmp_path))) == []


def test_a_refused_describe_quorum_leaves_the_controller_unknown_not_made_up(tmp_path, monkeypatch):
    """No DESCRIBE on the cluster: DescribeQuorum answers CLUSTER_AUTHORIZATION_FAILED. The
    controller is then unknown (one limit, said once), not DescribeCluster's answer, which on
    a KRaft cluster is a random broker (a real run saw the "controller" move 47 times in 8 s);
    and DescribeQuorum is not asked again at every sample."""
    import clusters.external as ext
    from clusters.observer import MetadataObserver
    from core.history import EventLog, read_table

    monkeypatch.setenv("KH_TEST_PW", "pw")
    cluster = ext.ExternalCluster(load_scenario(write(tmp_path, EXTERNAL)).cluster, run_id="R1")
    asked = []
    monkeypatch.setattr(ext, "quorum_leader", lambda host, port, timeout, security: asked.append(host) or (
        ext.CLUSTER_AUTHORIZATION_FAILED, None))

    class RandomController:                  # what a KRaft broker's DescribeCluster says
        def describe_cluster(self, **kw):
            raise AssertionError("DescribeCluster asked for the controller of a KRaft cluster")
    cluster._admin = RandomController()
    cluster.partitions = lambda topic=None, timeout=10: []
    events = EventLog(tmp_path, "R1", writer_name="t")
    observer = MetadataObserver(cluster, events)
    for _ in range(3):
        observer.sample()
    events.close()
    assert cluster.active_controller() is None and asked == ["localhost"]
    assert cluster.limits() == {"controller": "DescribeQuorum: CLUSTER_AUTHORIZATION_FAILED (the credentials "
                                              "lack DESCRIBE on the cluster)"}
    rows = [(e["name"], e["target"]) for e in read_table(tmp_path, "events").to_pylist() if e["kind"] == "observe"]
    assert rows == [("metadata-limited", "controller")]


@pytest.mark.parametrize("prefix, names", [(None, "whose names start with 'harness-'"),
                                           ("ci-{run_id}-", "whose names start with 'ci-'"),
                                           ("{run_id}-", "whose names start with a fixed part (put one before {run_id}")])
def test_a_user_who_may_not_create_is_told_the_acls_a_run_needs(tmp_path, monkeypatch, prefix, names):
    """The fix names the ACLs a run needs (as a real run needed them: no Describe on the
    cluster, Delete on groups too) on what every run's names start with, not on the
    preflight check's own prefix ("harness-preflight-", which no run uses)."""
    from confluent_kafka import KafkaError, KafkaException

    import clusters.external as ext
    monkeypatch.setenv("KH_TEST_PW", "pw")
    text = EXTERNAL if prefix is None else EXTERNAL.replace("    nodes:", f"    topic_prefix: '{prefix}'\n    nodes:")
    cluster = ext.ExternalCluster(load_scenario(write(tmp_path, text)).cluster, run_id="preflight")

    class Denied:
        def result(self, timeout=None):
            raise KafkaException(KafkaError(KafkaError.TOPIC_AUTHORIZATION_FAILED))

    class Admin:
        def create_topics(self, new, **kw):
            return {t.topic: Denied() for t in new}
    cluster._admin = Admin()
    with pytest.raises(SpecError) as e:
        cluster._may_create([("t", 3, 3)])
    assert e.value.field.endswith("cluster.external.client_config")
    assert e.value.problem.startswith("chaos may not create topics here")
    assert e.value.fix.startswith("grant chaos Create, Write, Read and Delete on topics and Read and Delete "
                                  f"on groups {names}")
    assert "preflight" not in e.value.fix


def test_what_the_run_could_not_delete_on_an_external_cluster_is_named(tmp_path, monkeypatch):
    """A user without Delete: stop() keeps what it could not remove (a group that never
    existed is not a leftover), and the report's "what else went wrong" names it."""
    from confluent_kafka import KafkaError, KafkaException

    import clusters.external as ext
    from core.timeline import Timeline
    from spark_reports.problems import find_problems
    from spark_reports.storage import RunLocation

    monkeypatch.setenv("KH_TEST_PW", "pw")

    class Refused:
        def __init__(self, code):
            self.code = code

        def result(self, timeout=None):
            raise KafkaException(KafkaError(self.code))

    class Admin:
        def delete_topics(self, names, operation_timeout=None):
            return {n: Refused(KafkaError.TOPIC_AUTHORIZATION_FAILED) for n in names}

        def delete_consumer_groups(self, groups):
            return {g: Refused(KafkaError.GROUP_AUTHORIZATION_FAILED if g.endswith("g0")
                               else KafkaError.GROUP_ID_NOT_FOUND) for g in groups}

    cluster = ext.ExternalCluster(load_scenario(write(tmp_path, EXTERNAL)).cluster, run_id="R1")
    cluster._admin = Admin()
    cluster._created = [f"{cluster.prefix}t"]
    cluster._groups = {f"{cluster.prefix}g0", f"{cluster.prefix}g1"}
    cluster.stop()
    assert cluster.left_behind == {f"topic {cluster.prefix}t": "TOPIC_AUTHORIZATION_FAILED",
                                   f"group {cluster.prefix}g0": "GROUP_AUTHORIZATION_FAILED"}
    (tmp_path / "phases.json").write_text(json.dumps([
        {"name": "cluster-stop", "outcome": "ok", "start_us": 1, "end_us": 2,
         "detail": {"left_on_cluster": cluster.left_behind}}]))
    [problem] = find_problems(Timeline(observations=[]), RunLocation.of(str(tmp_path)))
    assert problem["kind"] == "left-on-cluster"
    assert problem["text"] == ("the run could not remove from the external cluster: "
                               f"group {cluster.prefix}g0 (GROUP_AUTHORIZATION_FAILED), "
                               f"topic {cluster.prefix}t (TOPIC_AUTHORIZATION_FAILED)")
