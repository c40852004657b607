"""Every fault against one real KRaft combined cluster (3.9, three nodes,
client listeners through toxiproxy): it takes effect in a way we can see,
and after heal the cluster returns to full ISR with nothing left behind."""
from __future__ import annotations

import time

import pytest
from fault_helpers import (
    FAST_KRAFT,
    FENCED,
    ISR_SHRINKS,
    LEADER_COUNT,
    assert_paired,
    can_connect,
    elapsed,
    fail_over_controller,
    isr_of,
    leader_id,
    metric_sum,
    poll_for,
    produce,
    started_cluster,
)

from clusters.spec import ClusterSpec
from faults import network as net
from faults import selectors as sel
from faults import toxics
from faults.controller import ControllerFailover
from faults.disk import DiskFull, UnwritableLogDir
from faults.healall import heal_all_on_exit, leftovers
from faults.pause import DOCKER, SIGSTOP, Pause
from faults.process import CLEAN, HARD, Bounce, Kill
from faults.rolling import RollingRestart

T = "faults"

pytestmark = pytest.mark.cluster


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    spec = (ClusterSpec.kraft_combined("3.9").with_name("faults").with_heap(256)
            .with_log_dir_size(32).with_config(FAST_KRAFT).with_toxiproxy("client"))
    with started_cluster(spec, tmp_path_factory, T) as c:
        yield c


def other_than(cluster, node_id):
    return [b for b in cluster.brokers() if b.node_id != node_id]


# -- process -----------------------------------------------------------------
def test_kill_leader_moves_leadership(run, cluster):
    old = leader_id(cluster, T)
    f = Kill(sel.leader_of(T, 0), HARD)
    f.inject(run.ctx)
    assert not cluster.node(old).is_running()
    poll_for(lambda: leader_id(cluster, T) not in (None, old), what="a new leader")
    f.heal(run.ctx)
    assert_paired(run.event_rows(), f)


def test_terminate_follower_shrinks_isr(run, cluster):
    f = Kill(sel.one_follower_of(T, 0), CLEAN)
    f.inject(run.ctx)
    follower = f.targets[0].node_id
    poll_for(lambda: follower not in isr_of(cluster, T), what="ISR without the follower")
    f.heal(run.ctx)


def test_hard_bounce_of_the_leader_follows_leadership(run, cluster):
    # A partition led by a node that is not the active controller: killing the
    # controller first costs an election, and its successor gives every broker a
    # fresh session, so fencing (and the leadership move) can outlast the downtime.
    poll_for(lambda: cluster.active_controller() is not None, what="an active controller")
    controller = cluster.active_controller().node_id
    p = next(s.partition for s in cluster.partitions(T) if s.leader != controller)
    f = Bounce(sel.leader_of(T, p), HARD, times=2, interval_s=10, reselect=True)
    f.inject(run.ctx)
    first, second = f.detail["rounds"]
    assert first != second, "the leader lost leadership while down, so round 2 hit another node"
    f.heal(run.ctx)


# -- controller failover -----------------------------------------------------
@pytest.mark.parametrize("method", ["kill", "pause", "isolate"])
def test_controller_failover(run, cluster, method):
    f = fail_over_controller(run, cluster, method, wait_for_new_s=30)
    rows = run.event_rows()
    assert any(r["kind"] == "observe" and r["name"] == "controller" for r in rows)
    assert_paired(rows, f)


# -- network -----------------------------------------------------------------
def test_isolated_leader_loses_leadership_while_clients_still_reach_it(run, cluster):
    old = leader_id(cluster, T)
    majority = other_than(cluster, old)
    led_before = metric_sum(cluster, LEADER_COUNT, majority)
    f = net.Partition(net.isolate_leader(T, 0))
    f.inject(run.ctx)
    assert set(f.grudge) == {b.name for b in cluster.brokers()}
    # The majority elects new leaders (their own view; the isolated node's metadata is stale).
    poll_for(lambda: metric_sum(cluster, LEADER_COUNT, majority) > led_before,
             what="a leader on the majority side")
    # The harness (a client) still reaches the isolated node: its metrics endpoint answers,
    # and it still believes it leads.
    assert cluster.metrics(cluster.node(old)).get(LEADER_COUNT, 0) >= 1
    f.heal(run.ctx)


def test_halves_shrink_the_isr(run, cluster):
    shrinks_before = metric_sum(cluster, ISR_SHRINKS)
    f = net.Partition(net.halves())
    f.inject(run.ctx)
    # The minority's replicas drop out of the majority's ISRs (or it gets fenced).
    poll_for(lambda: metric_sum(cluster, ISR_SHRINKS) > shrinks_before
             or metric_sum(cluster, FENCED) > 0, what="an ISR shrink or a fenced broker")
    f.heal(run.ctx)


@pytest.mark.parametrize("shape", ["halves", "ring", "bridge"])
def test_split_cuts_exactly_the_grudged_links(run, cluster, shape):
    """Each node reaches exactly the peers its grudge allows (both directions)."""
    f = net.Partition({"halves": net.halves, "ring": net.ring, "bridge": net.bridge}[shape]())
    f.inject(run.ctx)
    nodes = cluster.brokers()
    cut = {(a, ip) for a, ips in f.grudge.items() for ip in ips}
    assert cut, "a split cuts something"
    for a in nodes:
        for b in nodes:
            if a.name != b.name:
                expect_open = (a.name, b.ip) not in cut and (b.name, a.ip) not in cut
                assert can_connect(a, b.ip) == expect_open, (shape, a.name, b.name, f.grudge)
    f.heal(run.ctx)
    assert all(can_connect(a, b.ip) for a in nodes for b in nodes if a.name != b.name)


def test_a_partition_over_a_stopped_broker_cuts_it_off_when_it_starts(run, cluster):
    """A nemesis partition while a rolling restart has a broker down: the down broker
    cannot take rules (Docker 409), the others' rules still cut it off once it is back."""
    down = cluster.node("kafka-3")
    others = [b for b in cluster.brokers() if b.name != down.name]
    down.stop()
    f = net.Partition(net.isolate(sel.node(down.name)))
    try:
        f.inject(run.ctx)
        assert f.detail["down_at_inject"] == [down.name]
        down.start()
        assert not any(can_connect(down, o.ip) for o in others), f.grudge
        assert all(can_connect(a, b.ip) for a in others for b in others if a is not b)
    finally:
        f.heal(run.ctx)
    poll_for(lambda: all(can_connect(down, o.ip) for o in others), what="the partition healed")


def test_clients_cut_off_cannot_produce(run, cluster):
    f = net.Partition(net.cut_clients())
    f.inject(run.ctx)
    acked, errors = produce(cluster, T, 3, timeout_s=4)
    assert acked == 0 and errors, "no write gets through to a cluster cut off from clients"
    f.heal(run.ctx)
    assert produce(cluster, T, 3)[0] == 3


# -- pauses -------------------------------------------------------------------
@pytest.mark.parametrize("method", [DOCKER, SIGSTOP])
def test_paused_leader_loses_leadership(run, cluster, method):
    old = leader_id(cluster, T)
    f = Pause(sel.leader_of(T, 0), method)
    f.inject(run.ctx)
    poll_for(lambda: leader_id(cluster, T) not in (None, old), what="leadership to move")
    f.heal(run.ctx)


# -- disk --------------------------------------------------------------------
def test_full_disk_on_the_leader(run, cluster):
    old = leader_id(cluster, T)
    f = DiskFull(sel.leader_of(T, 0))
    f.inject(run.ctx)
    # Writes hit ENOSPC on the leader: its log dir fails and leadership moves.
    produce(cluster, T, 50, partition=0, timeout_s=5, size=2000)
    poll_for(lambda: leader_id(cluster, T) not in (None, old), what="leadership to leave the full disk")
    f.heal(run.ctx)
    assert f.heal_notes["log_dir_failed"][f"kafka-{old}"] or \
        not f.heal_notes["broker_running_at_heal"][f"kafka-{old}"]
    assert cluster.broker_ready(cluster.node(old)), "the heal sees the broker through its start"


def test_unwritable_log_dir(run, cluster):
    victim = other_than(cluster, leader_id(cluster, T))[0]
    f = UnwritableLogDir(sel.node(victim.name))
    f.inject(run.ctx)
    # The broker finds its only log dir read-only, fails and exits.
    poll_for(lambda: not victim.is_running(), timeout_s=60, what="the broker to give up")
    assert "Read-only file system" in victim.logs()
    assert victim.node_id not in isr_of(cluster, T)
    f.heal(run.ctx)


# -- toxiproxy ---------------------------------------------------------------
def test_latency_toxic_slows_every_request(run, cluster):
    base, _ = elapsed(lambda: produce(cluster, T, 1))
    f = toxics.LinkToxic(toxics.latency(700, 50))
    f.inject(run.ctx)
    slow, (acked, _) = elapsed(lambda: produce(cluster, T, 1, timeout_s=20))
    f.heal(run.ctx)
    assert acked == 1 and slow > base + 1.0, (base, slow)


def test_timeout_toxic_on_the_leaders_link_stalls_its_clients(run, cluster):
    f = toxics.LinkToxic(toxics.timeout(0), toxics.proxies_of(sel.leader_of(T, 0)))
    f.inject(run.ctx)
    acked, errors = produce(cluster, T, 3, partition=0, timeout_s=4)
    f.heal(run.ctx)
    assert acked == 0 and errors


def test_reset_peer_toxic_breaks_connections(run, cluster):
    f = toxics.LinkToxic(toxics.reset_peer(0), streams=("upstream",))
    f.inject(run.ctx)
    acked, errors = produce(cluster, T, 3, timeout_s=4)
    f.heal(run.ctx)
    assert acked == 0 and errors


def test_bandwidth_toxic_limits_throughput(run, cluster):
    f = toxics.LinkToxic(toxics.bandwidth(32), streams=("upstream",))
    f.inject(run.ctx)
    # One partition, so all 160 KB cross one broker's link (spread over three links
    # in parallel, the same bytes take a third of the time).
    took, (acked, _) = elapsed(lambda: produce(cluster, T, 10, size=16_000, timeout_s=30,
                                               partition=0))
    f.heal(run.ctx)
    assert acked == 10 and took > 3.0, took      # 160 KB at 32 KB/s: about 5 s


@pytest.mark.parametrize("toxic", [toxics.slow_close(2000), toxics.slicer(16, 8, 500)])
def test_slow_close_and_slicer_are_applied_and_survivable(run, cluster, toxic):
    f = toxics.LinkToxic(toxic)
    f.inject(run.ctx)
    assert all(run.ctx.toxiproxy.toxics(p) for p in f.detail["proxies"])
    acked, _ = produce(cluster, T, 5, timeout_s=20)
    f.heal(run.ctx)
    assert acked == 5
    assert not any(run.ctx.toxiproxy.toxics(p) for p in f.detail["proxies"])


# -- rolling -----------------------------------------------------------------
def test_rolling_restart_restarts_every_broker_waiting_for_isr(run, cluster):
    started = {n.name: n.container.attrs["State"]["StartedAt"] for n in cluster.brokers()}
    f = RollingRestart(CLEAN, isr_timeout_s=90)
    f.inject(run.ctx)
    for n in cluster.brokers():
        n.container.reload()
        assert n.container.attrs["State"]["StartedAt"] != started[n.name]
    assert set(f.detail["settle_s"]) == set(started)
    f.heal(run.ctx)


# -- interrupted runs ----------------------------------------------------------
KINDS = {
    "kill": lambda: Kill(sel.random_broker, HARD),
    "partition": lambda: net.Partition(net.halves()),
    "pause": lambda: Pause(sel.random_broker, DOCKER),
    "sigstop": lambda: Pause(sel.random_broker, SIGSTOP),
    "disk-full": lambda: DiskFull(sel.random_broker),
    "unwritable": lambda: UnwritableLogDir(sel.random_broker),
    "toxic": lambda: toxics.LinkToxic(toxics.timeout(0)),
    "controller": lambda: ControllerFailover("pause", wait_for_new_s=0),
}


@pytest.mark.parametrize("kind", sorted(KINDS))
def test_interrupted_mid_fault_leaves_nothing_behind(run, cluster, kind):
    fault = KINDS[kind]()
    with pytest.raises(KeyboardInterrupt):
        with heal_all_on_exit(run.ctx):
            fault.inject(run.ctx)
            raise KeyboardInterrupt          # Ctrl-C in the middle of the fault
    assert run.ctx.heal_all_runs == 1 and fault.healed
    assert leftovers(run.ctx) == []
    assert all(n.status() == "running" for n in cluster.nodes())
    rows = run.event_rows()
    assert any(r["name"] == "heal-all" and '"interrupted"' in r["detail"] for r in rows)


def test_a_dead_harness_is_cleaned_by_the_next_one(run, cluster):
    """A harness process that died without healing: a fresh context's heal-all sweeps."""
    from faults.context import context_for
    from faults.healall import heal_all
    dead = context_for(cluster)
    net.Partition(net.isolate(sel.node("kafka-1"))).inject(dead)
    Pause(sel.node("kafka-2"), SIGSTOP).inject(dead)
    DiskFull(sel.node("kafka-3")).inject(dead)
    toxics.LinkToxic(toxics.latency(100)).inject(dead)
    assert len(leftovers(run.ctx)) >= 4
    report = heal_all(run.ctx, "crash-recovery")
    assert leftovers(run.ctx) == [] and not report.unhealed
    time.sleep(0.1)
