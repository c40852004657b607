import random

import pytest
from test_fault_fakes import FakeCluster

from clusters.api import PartitionState
from core.errors import SpecError
from faults.base import FaultContext, FaultError
from faults.catalog import catalog, fault_factory
from faults.rolling import RollingRestart, RollingUpgrade, features_upgrade_script, upgrade_order
from faults.schedule import ScheduleSpec, build_schedule


def test_upgrade_order_is_controllers_then_brokers(tmp_path):
    c = FakeCluster(tmp_path, brokers=3, controllers=3)
    assert [n.name for n in upgrade_order(c.nodes())] == [
        "controller-1", "controller-2", "controller-3", "kafka-1", "kafka-2", "kafka-3"]
    z = FakeCluster(tmp_path / "z", brokers=2, zookeepers=1)
    assert [n.name for n in upgrade_order(z.nodes())] == ["kafka-1", "kafka-2"]


def test_features_upgrade_command():
    assert features_upgrade_script("java -cp '/l/*'", "localhost:9092", "4.3") == (
        "java -cp '/l/*' org.apache.kafka.tools.FeatureCommand --bootstrap-server "
        "localhost:9092 upgrade --release-version 4.3")
    assert RollingUpgrade("4").release_version == "4.3"
    assert RollingUpgrade("4.3.1").release_version == "4.3"


def test_upgrade_needs_a_replaceable_cluster(tmp_path):
    ctx = FaultContext(cluster=FakeCluster(tmp_path))
    f = RollingUpgrade("4")
    with pytest.raises(FaultError, match="Replaceable"):
        f.inject(ctx)
    f.heal(ctx)


def test_rolling_restart_goes_one_broker_at_a_time(tmp_path):
    c = FakeCluster(tmp_path, brokers=3)
    c.partition_states = [PartitionState("t", 0, 1, (1, 2, 3), (1, 2, 3))]
    ctx = FaultContext(cluster=c, rng=random.Random(0))
    f = RollingRestart(isr_timeout_s=5)
    f.inject(ctx)
    assert [n.calls for n in c.brokers()] == [["stop", "start"]] * 3
    assert list(f.detail["settle_s"]) == ["kafka-1", "kafka-2", "kafka-3"]
    f.heal(ctx)


def test_catalog_builds_fresh_faults_for_every_kind(tmp_path):
    make = fault_factory("t")
    for kind in catalog("t"):
        a, b = make(kind, None), make(kind, None)
        assert a is not b and a.fault_id is None
    with pytest.raises(SpecError, match="nemesis.kinds"):
        make("meteor-strike", None)
    # every kind can appear in a schedule
    spec = ScheduleSpec(kinds=tuple(catalog("t")), duration_s=3000)
    assert {s.kind for s in build_schedule(0, spec).steps} <= set(catalog("t"))


class _ReplaceableFake(FakeCluster):
    """A FakeCluster that records re-creations: enough to run an upgrade's steps."""

    def __init__(self, root, spec, **kw):
        super().__init__(root, **kw)
        self.spec, self.done = spec, []
        for n in self.nodes("broker"):          # a ZooKeeper-mode broker's alias (clusters/config.py)
            n.name = f"broker-{n.node_id}"

    def replace_node(self, node, version):
        self.done.append(("replace", node.name, version))
        return node

    def reconfigure_node(self, node, plan):
        self.done.append(("restart", node.name, dict(self.spec.config).get(
            "inter.broker.protocol.version")))
        return node

    def adopt_spec(self, spec, cluster_id=None):
        self.spec = spec


def test_a_zookeeper_upgrade_runs_its_planned_steps_in_order_and_times_each(tmp_path):
    from clusters.spec import ClusterSpec
    from core.history import EventLog
    c = _ReplaceableFake(tmp_path, ClusterSpec.zookeeper("3.8", brokers=2), brokers=2, zookeepers=1)
    c.partition_states = [PartitionState("t", 0, 1, (1, 2), (1, 2))]
    ctx = FaultContext(cluster=c, events=EventLog(tmp_path / "run", "r1"))
    f = RollingUpgrade("3.9", isr_timeout_s=5)
    f.inject(ctx)
    assert c.done == [("replace", "broker-1", "3.9.2"), ("replace", "broker-2", "3.9.2"),
                      ("restart", "broker-1", "3.9"), ("restart", "broker-2", "3.9")]
    assert [s["action"] for s in f.detail["steps"]] == [
        "pin-protocol", "replace", "replace", "pin-protocol", "restart", "restart"]
    assert all(s["seconds"] >= 0 for s in f.detail["steps"])
    assert f.detail["path"].startswith("ZooKeeper 3.8 -> 3.9")
    f.heal(ctx)


def test_an_unsupported_pair_fails_the_fault_with_kafkas_reason(tmp_path):
    from clusters.spec import ClusterSpec
    c = _ReplaceableFake(tmp_path, ClusterSpec.zookeeper("3.9", brokers=2), brokers=2, zookeepers=1)
    with pytest.raises(FaultError, match="no ZooKeeper mode"):
        RollingUpgrade("4.1").inject(FaultContext(cluster=c))


def test_the_finalized_feature_levels_are_read_from_describe():
    from faults.rolling import _finalized_levels
    out = ("Feature: metadata.version\tSupportedMinVersion: 3.3-IV3\tSupportedMaxVersion: 4.3-IV0\t"
           "FinalizedVersionLevel: 4.3-IV0\tEpoch: 5\n"
           "Feature: kraft.version  SupportedMinVersion: 0  FinalizedVersionLevel: 0  Epoch: 5\n")
    assert _finalized_levels(out) == {"metadata.version": "4.3-IV0", "kraft.version": "0"}
