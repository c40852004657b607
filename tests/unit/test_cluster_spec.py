import dataclasses
from pathlib import Path

import pytest

from clusters.spec import ClusterSpec, validate_topic
from clusters.versions import resolve_version
from core.errors import SpecError


def test_defaults_are_valid():
    spec = ClusterSpec()
    assert spec.brokers == 3 and spec.is_kraft


@pytest.mark.parametrize("build, field, fix_word", [
    (lambda: ClusterSpec.zookeeper("4"), "mode", "kraft"),
    (lambda: ClusterSpec.kraft_combined("5.1"), "version", "clusters/versions.py"),
    (lambda: ClusterSpec.kraft_combined(nodes=6), "brokers", "1 to 5"),
    (lambda: ClusterSpec.kraft_isolated(controllers=2), "controllers", "1 or 3"),
    (lambda: ClusterSpec.zookeeper(zookeepers=2), "zookeepers", "1 or 3"),
    (lambda: ClusterSpec().with_config({"min.insync.replicas": 4}), "config.min.insync.replicas",
     "at most 3"),
    (lambda: ClusterSpec().with_config({"default.replication.factor": 2, "min.insync.replicas": 3}),
     "config.min.insync.replicas", "at most 2"),
    (lambda: ClusterSpec().with_config({"default.replication.factor": 4}),
     "config.default.replication.factor", "at most 3"),
    (lambda: ClusterSpec().with_config({"node.id": 7}), "config.node.id", "remove it"),
    (lambda: ClusterSpec().with_config({"min.insync.replicas": "two"}), "config.min.insync.replicas",
     "whole number"),
    (lambda: ClusterSpec().with_broker_config(9, {"a": 1}), "broker_config.9", "1 to 3"),
    (lambda: ClusterSpec().with_broker_config(2, {"min.insync.replicas": 5}),
     "broker_config.2.min.insync.replicas", "at most 3"),
    (lambda: ClusterSpec(toxiproxy="sometimes"), "toxiproxy", "client"),
    (lambda: ClusterSpec(heap_mb=64), "heap_mb", "512"),
])
def test_impossible_specs_are_refused_naming_field_and_fix(build, field, fix_word):
    with pytest.raises(SpecError) as e:
        build()
    assert e.value.field == field
    assert "fix:" in str(e.value) and fix_word in str(e.value)


def test_from_dict_refuses_unknown_and_mistyped_fields():
    with pytest.raises(SpecError) as e:
        ClusterSpec.from_dict({"mode": "kraft-combined", "borkers": 3})
    assert e.value.field == "cluster.borkers"
    with pytest.raises(SpecError) as e:
        ClusterSpec.from_dict({"brokers": "three"})
    assert e.value.field == "cluster.brokers"


def test_from_dict_round_trip():
    spec = ClusterSpec.from_dict({"mode": "zookeeper", "version": "3.9", "brokers": 4,
                                  "config": {"min.insync.replicas": 2},
                                  "broker_config": {1: {"log.retention.ms": -1}}})
    assert spec.props_for(1) == {"min.insync.replicas": "2", "log.retention.ms": "-1"}
    assert spec.props_for(2) == {"min.insync.replicas": "2"}
    assert spec.to_dict()["version"] == resolve_version("3.9").version == "3.9.2"


def test_spec_is_frozen_and_fluent_builders_return_new_specs():
    a = ClusterSpec()
    b = a.with_config({"x.y": 1})
    assert a.config == () and b.config == (("x.y", "1"),)
    with pytest.raises(dataclasses.FrozenInstanceError):
        a.brokers = 5


def test_versions_resolve_by_alias_and_exact():
    assert resolve_version("3.9").zookeeper
    assert not resolve_version("4").zookeeper
    assert resolve_version(resolve_version("4").version) == resolve_version("4")


@pytest.mark.parametrize("args, field", [
    (("t", 6, 4, None), "topic.replication_factor"),
    (("t", 0, 3, None), "topic.partitions"),
    (("bad name", 1, 1, None), "topic.name"),
    (("t", 6, 2, {"min.insync.replicas": "3"}), "topic.configs.min.insync.replicas"),
])
def test_impossible_topics_are_refused(args, field):
    with pytest.raises(SpecError) as e:
        validate_topic(ClusterSpec(), *args)
    assert e.value.field == field


def test_cluster_min_isr_applies_to_topics():
    spec = ClusterSpec().with_config({"min.insync.replicas": 3})
    with pytest.raises(SpecError):
        validate_topic(spec, "t", 1, 2, None)
    validate_topic(spec, "t", 1, 3, None)


def test_transaction_version_formats_the_cluster_on_4x_only():
    from clusters.config import format_args
    held = ClusterSpec.from_dict({"version": "4.3.1", "transaction_version": 1})
    assert "--feature transaction.version=1" in format_args(held)
    assert "transaction.version" not in format_args(ClusterSpec.from_dict({"version": "4.3.1"}))
    with pytest.raises(SpecError, match="no transaction.version feature"):
        ClusterSpec.from_dict({"version": "3.9.2", "transaction_version": 1})
    with pytest.raises(SpecError) as e:
        ClusterSpec.from_dict({"version": "4.3.1", "transaction_version": 3})
    assert e.value.field == "cluster.transaction_version"


def test_log_levels_reach_each_kafka_node_as_an_environment_variable():
    from clusters.log_levels import log_levels_env

    spec = ClusterSpec.from_dict({"log_levels": {"kafka.coordinator.transaction": "debug",
                                                 "kafka.server.ReplicaManager": "TRACE"}})
    assert log_levels_env(spec.log_levels) == {
        "LOG_LEVELS": "kafka.coordinator.transaction=DEBUG,kafka.server.ReplicaManager=TRACE"}
    assert log_levels_env(ClusterSpec.from_dict({}).log_levels) == {}


@pytest.mark.parametrize("levels, problem", [
    ({"kafka.coordinator.transaction": "LOUD"}, "unknown level 'LOUD'"),
    ({"kafka..transaction": "DEBUG"}, "not a logger name"),
    ({"kafka.x,kafka.y": "DEBUG"}, "not a logger name"),
])
def test_a_log_level_or_logger_the_node_could_not_take_is_refused(levels, problem):
    with pytest.raises(SpecError) as e:
        ClusterSpec.from_dict({"log_levels": levels})
    assert e.value.field == f"log_levels.{next(iter(levels))}" and problem in e.value.problem


def test_the_entrypoint_adds_each_logger_to_both_log4j_files(tmp_path):
    """The entrypoint's LOG_LEVELS step, run by bash on copies of the image's files: log4j 1
    reads a logger line, log4j 2's YAML a Logger entry that stays inside its list."""
    import re
    import subprocess

    import yaml

    files = Path(__file__).parents[2] / "clusters" / "image_files"
    script = (files / "entrypoint.sh").read_text()
    step = re.search(r'    if \[ -n "\$\{LOG_LEVELS:-\}" \]; then\n(.*?)\n    fi\n', script, re.S).group(1)
    # /tmp/ first: the checkout itself may live under /tmp (CI's clone did)
    step = step.replace("/tmp/", f"{tmp_path}/").replace("/opt/kafka/", f"{files}/")
    step = "set -e\n" + step
    env = {"LOG_LEVELS": "kafka.coordinator.transaction=DEBUG,kafka.log=TRACE", "PATH": "/usr/bin:/bin"}
    subprocess.run(["bash", "-c", step], env=env, check=True)
    props = (tmp_path / "log4j.properties").read_text().splitlines()
    assert props[-2:] == ["log4j.logger.kafka.coordinator.transaction=DEBUG", "log4j.logger.kafka.log=TRACE"]
    loggers = yaml.safe_load((tmp_path / "log4j2.yaml").read_text())["Configuration"]["Loggers"]["Logger"]
    assert {"name": "kafka.coordinator.transaction", "level": "DEBUG"} in loggers
    assert {"name": "kafka.log", "level": "TRACE"} in loggers and len(loggers) == 4


def test_share_version_is_for_lines_with_share_groups():
    assert [ClusterSpec.from_dict({"version": v}).share_groups_enabled
            for v in ("3.9.2", "4.0.2", "4.1.2", "4.2.2", "4.3.1")] == [None, None, False, True, True]
    assert ClusterSpec.from_dict({"version": "4.1.2", "share_version": 1}).share_groups_enabled is True
    assert ClusterSpec.from_dict({"version": "4.3.1", "share_version": 0}).share_groups_enabled is False
    for version in ("3.9.2", "4.0.2"):
        with pytest.raises(SpecError, match="has no share groups") as e:
            ClusterSpec.from_dict({"version": version, "share_version": 1})
        assert e.value.field == "cluster.share_version" and "4.1 or later" in str(e.value)
    for bad in (2, True, "1"):
        with pytest.raises(SpecError) as e:
            ClusterSpec.from_dict({"version": "4.3.1", "share_version": bad})
        assert e.value.field == "cluster.share_version"
    # recorded in the manifest only when set
    assert "share_version" not in ClusterSpec.from_dict({"version": "4.3.1"}).to_dict()
    assert ClusterSpec.from_dict({"version": "4.1.2", "share_version": 1}).to_dict()["share_version"] == 1


def test_the_protocol_proxy_needs_toxiproxy_and_a_plaintext_cluster():
    from clusters.spec import ClusterSpec as Spec
    with pytest.raises(SpecError) as e:
        Spec.from_dict({"protocol_proxy": True})
    assert e.value.field == "protocol_proxy" and "toxiproxy" in str(e.value)
    with pytest.raises(SpecError) as e:
        Spec.from_dict({"protocol_proxy": "yes", "toxiproxy": "client"})
    assert e.value.field == "cluster.protocol_proxy"
    spec = Spec.from_dict({"protocol_proxy": True, "toxiproxy": "client"})
    assert spec.protocol_proxy and spec.to_dict()["protocol_proxy"] is True
    assert "protocol_proxy" not in Spec().to_dict()
