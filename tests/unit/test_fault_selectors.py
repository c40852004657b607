import random

import pytest

from clusters.api import PartitionState
from faults import selectors as sel
from faults.base import FaultContext
from test_fault_fakes import FakeCluster


@pytest.fixture
def ctx(tmp_path):
    cluster = FakeCluster(tmp_path, brokers=5)
    cluster.partition_states = [PartitionState("t", 0, 3, (3, 1, 5), (3, 1, 5)),
                                PartitionState("t", 1, None, (2, 4, 1), (2,))]
    cluster.controller_id = 2
    return FaultContext(cluster=cluster, rng=random.Random(1))


def names(nodes):
    return [n.name for n in nodes]


def test_leader_and_followers(ctx):
    assert names(sel.leader_of("t", 0)(ctx)) == ["kafka-3"]
    assert names(sel.followers_of("t", 0)(ctx)) == ["kafka-1", "kafka-5"]
    assert sel.one_follower_of("t", 0)(ctx)[0].name in ("kafka-1", "kafka-5")


def test_leaderless_partition_is_an_error_naming_it(ctx):
    with pytest.raises(sel.SelectorError, match="t-1 has no leader"):
        sel.leader_of("t", 1)(ctx)
    with pytest.raises(sel.SelectorError, match="no partition t-7"):
        sel.followers_of("t", 7)(ctx)


def test_controller_selectors(ctx):
    assert names(sel.active_controller(ctx)) == ["kafka-2"]
    assert names(sel.quorum_leader(ctx)) == ["kafka-2"]      # combined KRaft: quorum leader
    ctx.cluster.controller_id = None
    with pytest.raises(sel.SelectorError):
        sel.active_controller(ctx)


def test_random_broker_is_seeded(ctx, tmp_path):
    picks = [sel.random_broker(ctx)[0].name for _ in range(10)]
    again = FaultContext(cluster=ctx.cluster, rng=random.Random(1))
    assert picks == [sel.random_broker(again)[0].name for _ in range(10)]
    assert len(set(picks)) > 1


def test_all_brokers_excludes_zookeeper(tmp_path):
    cluster = FakeCluster(tmp_path, brokers=3, zookeepers=3)
    ctx = FaultContext(cluster=cluster)
    assert names(sel.all_brokers(ctx)) == ["kafka-1", "kafka-2", "kafka-3"]
    assert len(sel.all_nodes(ctx)) == 6
    assert names(sel.zookeepers(ctx)) == ["zk-1", "zk-2", "zk-3"]


@pytest.mark.parametrize("size,expected_minority", [(3, 1), (4, 1), (5, 2), (6, 2), (7, 3)])
def test_minority_and_majority_split_the_pool(tmp_path, size, expected_minority):
    cluster = FakeCluster(tmp_path, brokers=size)
    # Same seed for both selectors: they describe the two sides of one split.
    minority = sel.minority(sel.all_brokers)(FaultContext(cluster=cluster, rng=random.Random(5)))
    majority = sel.majority(sel.all_brokers)(FaultContext(cluster=cluster, rng=random.Random(5)))
    assert len(minority) == expected_minority
    assert len(majority) == size - expected_minority > size / 2
    assert set(names(minority)).isdisjoint(names(majority))


def test_zookeeper_leader_reads_srvr_mode(tmp_path):
    cluster = FakeCluster(tmp_path, brokers=1, zookeepers=3)
    outputs = {"zk-1": "Mode: follower", "zk-2": "Mode: leader", "zk-3": "Mode: follower"}
    for zk in cluster.nodes("zookeeper"):
        zk.exec = (lambda out: lambda cmd, user="root": type(
            "R", (), {"exit_code": 0, "output": f"Zookeeper version: 3.8\n{out}\n"})())(
            outputs[zk.name])
    ctx = FaultContext(cluster=cluster)
    assert names(sel.zookeeper_leader(ctx)) == ["zk-2"]
    assert names(sel.quorum_leader(ctx)) == ["zk-2"]          # ZooKeeper mode: ZK leader
