import functools
import random
import threading

import pytest
from test_fault_fakes import FakeCluster

from clusters.api import ExecResult, PartitionState
from core.errors import SpecError
from faults import selectors as sel
from faults.base import FaultContext


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


def test_in_sync_follower_skips_followers_out_of_the_isr(ctx):
    ctx.cluster.partition_states = [PartitionState("t", 0, 3, (3, 1, 5), (3, 5))]
    assert [names(sel.in_sync_follower_of("t", 0)(ctx)) for _ in range(5)] == [["kafka-5"]] * 5
    ctx.cluster.partition_states = [PartitionState("t", 0, 3, (3, 1, 5), (3,))]
    with pytest.raises(sel.SelectorError, match="t-0 has no follower in its ISR"):
        sel.in_sync_follower_of("t", 0)(ctx)


def test_leaderless_partition_is_an_error_naming_it(ctx):
    ctx.leader_wait_s = 0.3
    with pytest.raises(sel.SelectorError, match="t-1 has had no live leader for 0.3 s"):
        sel.leader_of("t", 1)(ctx)
    with pytest.raises(sel.SelectorError, match="no partition t-7"):
        sel.followers_of("t", 7)(ctx)


def test_a_partition_between_leaders_is_waited_for(ctx):
    # A ZooKeeper nemesis's bounce-leader-hard came during a controller kill's election:
    # "t-0 has no leader", and the fault never happened.
    elected = PartitionState("t", 1, 3, (3, 1, 5), (3, 1, 5))
    states = ctx.cluster.partition_states
    timer = threading.Timer(0.5, lambda: setattr(ctx.cluster, "partition_states",
                                                 [states[0], elected]))
    timer.start()
    assert names(sel.leader_of("t", 1)(ctx)) == ["kafka-3"]


def test_a_leader_whose_container_is_down_is_not_selected(ctx):
    # ZooKeeper mode names a crashed broker leader until its session expires: a
    # disk-full-leader then exec'd into a stopped container (Docker 409).
    ctx.leader_wait_s = 0.3
    ctx.cluster.node("kafka-3").stop()
    with pytest.raises(sel.SelectorError, match=r"no live leader .*named: kafka-3, down"):
        sel.leader_of("t", 0)(ctx)
    threading.Timer(0.2, ctx.cluster.node("kafka-3").start).start()
    ctx.leader_wait_s = 5
    assert names(sel.leader_of("t", 0)(ctx)) == ["kafka-3"]


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
        out = f"Zookeeper version: 3.8\n{outputs[zk.name]}\n"
        zk.exec = functools.partial(lambda text, cmd, user="root": ExecResult(0, text), out)
    ctx = FaultContext(cluster=cluster)
    assert names(sel.zookeeper_leader(ctx)) == ["zk-2"]
    assert names(sel.quorum_leader(ctx)) == ["zk-2"]          # ZooKeeper mode: ZK leader


# -- selectors as data -------------------------------------------------------------------
PARSED = [
    ("random_broker", "random_broker"),
    ("all_brokers", "all_brokers"),
    ("minority", "minority"),
    ({"leader_of": {"topic": "t", "partition": 0}}, "leader_of('t', 0)"),
    ({"leader_of": {"topic": "t"}}, "leader_of('t', 0)"),
    ({"followers_of": {"topic": "t", "partition": 0}}, "followers_of('t', 0)"),
    ({"one_follower_of": {"topic": "t", "partition": 0}}, "one_follower_of('t', 0)"),
    ({"node": "kafka-4"}, "node('kafka-4')"),
    ({"node": 4}, "node(4)"),
    ({"minority": {"pool": "all_brokers"}}, "minority(all_brokers)"),
    ({"majority": None}, "majority"),
    ({"random_of": {"pool": {"followers_of": {"topic": "t"}}, "count": 2}},
     "random_of(followers_of('t', 0), 2)"),
]


@pytest.mark.parametrize("spec,name", PARSED, ids=[p[1] for p in PARSED])
def test_parse_selector_builds_a_named_selector(ctx, spec, name):
    selector = sel.parse_selector(spec, "x.target")
    assert selector.__name__ == name
    assert selector(ctx)                      # selects at least one node on the fake cluster


def test_parsed_selectors_select_what_they_name(ctx):
    parse = sel.parse_selector
    assert names(parse({"leader_of": {"topic": "t", "partition": 0}}, "x")(ctx)) == ["kafka-3"]
    assert names(parse({"followers_of": {"topic": "t"}}, "x")(ctx)) == ["kafka-1", "kafka-5"]
    assert names(parse({"node": 4}, "x")(ctx)) == ["kafka-4"]
    assert names(parse("active_controller", "x")(ctx)) == ["kafka-2"]
    two = parse({"random_of": {"pool": {"followers_of": {"topic": "t"}}, "count": 2}}, "x")(ctx)
    assert sorted(names(two)) == ["kafka-1", "kafka-5"]
    assert len(parse({"minority": {"pool": "all_brokers"}}, "x")(ctx)) == 2
    assert parse(sel.random_broker, "x") is sel.random_broker   # a selector passes through


def test_every_bare_name_parses():
    for name in sel.BARE_SELECTORS:
        assert sel.parse_selector(name, "x").__name__ == name


# (spec, field named, text in the message)
BAD = [
    ("leadr_of", "t", "unknown selector 'leadr_of'"),
    ("leadr_of", "t", "did you mean 'leader_of'"),
    ({"leadr_of": {"topic": "t"}}, "t", "use one of active_controller, all_brokers"),
    ("leader_of", "t", "needs arguments"),
    ("random_of", "t", "{random_of: {pool: <selector>, count: 2}}"),
    ({"leader_of": {}}, "t.leader_of.topic", "is required"),
    ({"leader_of": None}, "t.leader_of.topic", "is required"),
    ({"leader_of": {"topic": ""}}, "t.leader_of.topic", "must be a topic name"),
    ({"leader_of": {"topic": 7}}, "t.leader_of.topic", "must be a topic name, got 7"),
    ({"leader_of": {"topic": "t", "partition": -1}}, "t.leader_of.partition", ">= 0"),
    ({"leader_of": {"topic": "t", "partition": True}}, "t.leader_of.partition", "integer"),
    ({"followers_of": {"topic": "t", "partiton": 1}}, "t.followers_of.partiton",
     "unknown argument 'partiton'"),
    ({"one_follower_of": "t"}, "t.one_follower_of", "must be a mapping of topic, partition"),
    ({"node": None}, "t.node", "node name or id"),
    ({"node": ["kafka-1"]}, "t.node", "node name or id"),
    ({"minority": {"pool": "brokers"}}, "t.minority.pool", "unknown selector 'brokers'"),
    ({"majority": {"size": 2}}, "t.majority.size", "unknown argument"),
    ({"random_of": {"count": 2}}, "t.random_of.pool", "is required"),
    ({"random_of": {"pool": "all_nodes", "count": 0}}, "t.random_of.count", ">= 1"),
    ({"random_of": {"pool": {"leader_of": {"topic": "t", "partition": "p"}}}},
     "t.random_of.pool.leader_of.partition", "integer"),
    ({"leader_of": {"topic": "t"}, "node": 1}, "t", "exactly one key"),
    ({}, "t", "exactly one key"),
    (3, "t", "a name or a one-key mapping"),
    (None, "t", "a name or a one-key mapping"),
]


@pytest.mark.parametrize("spec,field,text", BAD, ids=[f"{b[1]}:{b[2][:20]}" for b in BAD])
def test_bad_selector_names_the_field(spec, field, text):
    with pytest.raises(SpecError) as e:
        sel.parse_selector(spec, "t")
    assert e.value.field == field
    assert str(e.value).startswith(f"{field}: ") and text in str(e.value)


@pytest.mark.parametrize("spec,refs", [
    ("random_broker", []),
    ({"node": 1}, []),
    ({"leader_of": {"topic": "a", "partition": 3}}, [("a", 3)]),
    ({"one_follower_of": {"topic": "a"}}, [("a", 0)]),
    ({"random_of": {"pool": {"followers_of": {"topic": "b", "partition": 1}}}}, [("b", 1)]),
    ({"minority": {"pool": {"majority": {"pool": {"leader_of": {"topic": "c"}}}}}}, [("c", 0)]),
    ({"leader_of": {"partition": 1}}, []),                  # malformed: parse_selector reports it
    ({"leader_of": "a"}, []),
])
def test_selector_refs(spec, refs):
    assert sel.selector_refs(spec) == refs
