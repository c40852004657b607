import random

import pytest
from test_fault_fakes import FakeCluster

from clusters.api import PartitionState
from faults.base import FaultContext, FaultError
from faults.catalog import catalog, fault_factory
from faults.rolling import RollingRestart, RollingUpgrade, features_upgrade_script, upgrade_order
from faults.schedule import ScheduleSpec, build_schedule
from harness.errors import SpecError


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
