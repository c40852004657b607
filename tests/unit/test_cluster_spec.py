import dataclasses

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


def test_broker_log_levels_are_set_on_every_broker_with_either_config_command():
    from clusters.api import ExecResult
    from clusters.log_levels import set_broker_log_levels

    class Node:
        def __init__(self, i, code):
            self.name, self.node_id, self.code, self.ran = f"kafka-{i}", i, code, []

        def exec(self, cmd):
            self.ran.append(cmd[-1])
            return ExecResult(self.code, "no such class")

    nodes = [Node(1, 0), Node(2, 1)]
    cluster = type("C", (), {"brokers": lambda self: nodes})()
    spec = ClusterSpec.from_dict({"log_levels": {"kafka.coordinator.transaction": "DEBUG"}})
    assert set_broker_log_levels(cluster, dict(spec.log_levels)) == {
        "kafka-1": "ok", "kafka-2": "no such class"}
    script = nodes[1].ran[0]
    assert "--entity-name 2" in script and "kafka.coordinator.transaction=DEBUG" in script
    assert "org.apache.kafka.tools.ConfigCommand" in script and "|| " in script
