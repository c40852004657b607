import random

import pytest
from test_fault_fakes import FakeCluster

from clusters.api import PartitionState
from faults import network as net
from faults import selectors as sel
from faults.base import FaultContext, FaultError
from faults.healall import heal_all, leftovers


class N:
    def __init__(self, i):
        self.name, self.ip = f"n{i}", f"10.0.0.{i}"


def nodes(k):
    return [N(i) for i in range(1, k + 1)]


def cut_pairs(grudge, all_nodes):
    """Unordered pairs that cannot talk, checking both sides drop each other."""
    by_ip = {n.ip: n.name for n in all_nodes}
    pairs = set()
    for name, ips in grudge.items():
        for ip in ips:
            other = by_ip[ip]
            assert next(n for n in all_nodes if n.name == name).ip in grudge.get(other, ()), \
                f"{name} drops {other} but not the other way round"
            pairs.add(frozenset((name, other)))
    return pairs


def test_isolate_cuts_exactly_the_target_both_ways():
    ns = nodes(4)
    g = net.isolate_grudge([ns[0]], ns)
    assert cut_pairs(g, ns) == {frozenset(("n1", f"n{i}")) for i in (2, 3, 4)}


def test_halves():
    ns = nodes(5)
    g = net.halves_grudge(ns[:2], ns[2:])
    assert len(cut_pairs(g, ns)) == 2 * 3


def test_bridge_node_sees_everyone_and_halves_do_not_see_each_other():
    ns = nodes(5)
    g = net.bridge_grudge(ns)
    assert "n1" not in g
    assert cut_pairs(g, ns) == {frozenset(p) for p in
                                [("n2", "n4"), ("n2", "n5"), ("n3", "n4"), ("n3", "n5")]}
    with pytest.raises(FaultError):
        net.bridge_grudge(ns[:2])


@pytest.mark.parametrize("k", [4, 5, 6, 7])
def test_ring_every_node_sees_a_majority_and_views_differ(k):
    ns = nodes(k)
    g = net.ring_grudge(ns)
    cut_pairs(g, ns)                                    # symmetric
    views = []
    for n in ns:
        visible = k - len(g.get(n.name, ()))
        assert visible >= k // 2 + 1, f"{n.name} sees only {visible} of {k}"
        assert visible < k, f"{n.name} sees everyone: not a partition"
        views.append(frozenset(g.get(n.name, ())))
    assert len(set(views)) == k


def test_ring_of_three_is_a_bridge():
    ns = nodes(3)
    assert net.ring_grudge(ns) == net.bridge_grudge(ns)


def test_iptables_command_text():
    assert net.add_script(["10.0.0.2"]) == (
        "{ iptables -w -N HARNESS 2>/dev/null; iptables -w -C INPUT -j HARNESS 2>/dev/null "
        "|| iptables -w -I INPUT 1 -j HARNESS; } && iptables -w -A HARNESS -s 10.0.0.2 -j DROP")
    assert net.remove_script(["10.0.0.2", "10.0.0.3"]) == (
        "iptables -w -D HARNESS -s 10.0.0.2 -j DROP 2>/dev/null; "
        "iptables -w -D HARNESS -s 10.0.0.3 -j DROP 2>/dev/null; true")
    assert net.flush_script() == "iptables -w -F HARNESS 2>/dev/null; true"


@pytest.fixture
def ctx(tmp_path):
    cluster = FakeCluster(tmp_path, brokers=3)
    cluster.partition_states = [PartitionState("t", 0, 2, (1, 2, 3), (1, 2, 3))]
    return FaultContext(cluster=cluster, rng=random.Random(3), log_dir=str(tmp_path / "none"))


def rules(ctx):
    return {n.name: n.rules() for n in ctx.cluster.nodes()}


def test_partition_inject_and_heal_on_nodes(ctx):
    f = net.Partition(net.isolate(sel.node("kafka-1")))
    f.inject(ctx)
    assert rules(ctx) == {"kafka-1": ["-s 172.30.0.12 -j DROP", "-s 172.30.0.13 -j DROP"],
                          "kafka-2": ["-s 172.30.0.11 -j DROP"],
                          "kafka-3": ["-s 172.30.0.11 -j DROP"]}
    # the jump from INPUT is added once, however often a partition is injected
    f2 = net.Partition(net.isolate(sel.node("kafka-2")))
    f2.inject(ctx)
    f.heal(ctx)
    f.heal(ctx)                                       # idempotent
    assert rules(ctx) == {"kafka-1": ["-s 172.30.0.12 -j DROP"],
                          "kafka-2": ["-s 172.30.0.11 -j DROP", "-s 172.30.0.13 -j DROP"],
                          "kafka-3": ["-s 172.30.0.12 -j DROP"]}, "overlapping faults keep theirs"
    f2.heal(ctx)
    assert rules(ctx) == {"kafka-1": [], "kafka-2": [], "kafka-3": []}
    import json
    jumps = json.load(open(ctx.cluster.node("kafka-1").state_dir / "iptables.json"))["INPUT"]
    assert jumps == ["-j HARNESS"]


def test_isolate_leader_keeps_clients(ctx):
    f = net.Partition(net.isolate_leader("t", 0))
    f.inject(ctx)
    assert f.detail["grudge"]["kafka-2"] == ["172.30.0.11", "172.30.0.13"]
    assert all("172.30.0.1 " not in r for rs in rules(ctx).values() for r in rs)
    f.heal(ctx)


def test_cut_clients_uses_the_default_gateway(ctx):
    f = net.Partition(net.cut_clients())
    f.inject(ctx)
    assert rules(ctx) == {n: ["-s 172.30.0.1 -j DROP"] for n in ("kafka-1", "kafka-2", "kafka-3")}
    f.heal(ctx)
    ctx.client_ips = ("192.168.5.5",)
    f = net.Partition(net.cut_clients(sel.node("kafka-3")))
    f.inject(ctx)
    assert rules(ctx)["kafka-3"] == ["-s 192.168.5.5 -j DROP"]
    f.heal(ctx)


def test_heal_of_a_node_restarted_meanwhile_is_fine(ctx):
    f = net.Partition(net.isolate(sel.node("kafka-3")))
    f.inject(ctx)
    node = ctx.cluster.node("kafka-3")
    node.kill()
    f.heal(ctx)                                       # stopped: nothing to remove, not an error
    assert f.healed
    node.start()
    assert node.rules() == []


def test_a_partition_over_a_node_another_fault_has_down_still_cuts_it_off(ctx):
    # A rolling restart had a broker down when the nemesis cut the cluster in halves:
    # the inject failed (Docker 409) and the partition never happened.
    ctx.cluster.node("kafka-3").stop()
    f = net.Partition(net.isolate(sel.node("kafka-3")))
    f.inject(ctx)
    assert f.detail["down_at_inject"] == ["kafka-3"]
    assert rules(ctx) == {"kafka-1": ["-s 172.30.0.13 -j DROP"],
                          "kafka-2": ["-s 172.30.0.13 -j DROP"], "kafka-3": []}
    f.heal(ctx)
    assert rules(ctx) == {"kafka-1": [], "kafka-2": [], "kafka-3": []}


def test_a_partition_that_cannot_reach_a_running_node_fails_its_inject(ctx):
    ctx.cluster.node("kafka-2").pause()
    f = net.Partition(net.isolate(sel.node("kafka-3")))
    with pytest.raises(Exception, match="paused"):
        f.inject(ctx)


def test_rules_in_a_paused_container_are_removed_by_heal_all(ctx):
    f = net.Partition(net.isolate(sel.node("kafka-1")))
    f.inject(ctx)
    ctx.cluster.node("kafka-1").pause()               # e.g. a pause fault injected afterwards
    with pytest.raises(FaultError):
        f.heal(ctx)
    assert not f.healed and f.fault_id in ctx.active
    report = heal_all(ctx, "test")
    assert report.unhealed == {} and f.fault_id in report.healed
    assert leftovers(ctx) == []
