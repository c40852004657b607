"""KRaft with isolated controllers (4.x, three brokers, three controllers),
client and replication listeners through toxiproxy: quorum-leader failover
and degraded replication links."""
from __future__ import annotations

import pytest
from fault_helpers import (
    FAST_KRAFT,
    assert_paired,
    elapsed,
    isr_of,
    leader_id,
    poll_for,
    produce,
    started_cluster,
    whole,
)

from clusters.spec import ClusterSpec
from faults import selectors as sel
from faults import toxics
from faults.controller import ControllerFailover

T = "isofaults"

pytestmark = pytest.mark.cluster


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    spec = (ClusterSpec.kraft_isolated("4", brokers=3, controllers=3).with_name("isofaults")
            .with_heap(256).with_log_dir_size(32).with_config(FAST_KRAFT)
            .with_toxiproxy("client+replication"))
    with started_cluster(spec, tmp_path_factory, T) as c:
        yield c


@pytest.mark.parametrize("method", ["kill", "pause"])
def test_quorum_leader_failover_in_isolated_mode(run, cluster, method):
    poll_for(lambda: cluster.active_controller() is not None, what="an active controller")
    leader = sel.quorum_leader(run.ctx)[0]
    assert leader.role == "controller"
    f = ControllerFailover(method, wait_for_new_s=30)
    f.inject(run.ctx)
    assert f.detail["previous_controller"] == leader.name
    assert f.detail["new_controller"] not in (None, leader.name)
    assert run.ctx.cluster.node(f.detail["new_controller"]).role == "controller"
    f.heal(run.ctx)
    assert_paired(run.event_rows(), f)


def test_isolated_quorum_leader_is_replaced_then_heals_to_full_isr(run, cluster):
    """A network partition (not a crash): the old quorum leader keeps running but
    cannot reach the other controllers, so they elect a new leader among themselves."""
    poll_for(lambda: cluster.active_controller() is not None, what="an active controller")
    leader = sel.quorum_leader(run.ctx)[0]
    assert leader.role == "controller"
    f = ControllerFailover("isolate", wait_for_new_s=30)
    f.inject(run.ctx)
    assert f.detail["previous_controller"] == leader.name
    assert leader.is_running() and leader.status() == "running"    # cut off, not stopped
    new = f.detail["new_controller"]
    assert new not in (None, leader.name), f.detail
    assert cluster.node(new).role == "controller"
    # the cluster keeps working under the new leader: acks=all writes succeed
    assert produce(cluster, T, 3, timeout_s=20)[0] == 3
    f.heal(run.ctx)
    whole(cluster, 90)
    assert all(set(s.isr) == set(s.replicas) for s in cluster.partitions(T))
    rows = run.event_rows()
    assert_paired(rows, f)
    assert any(r["kind"] == "observe" and r["name"] == "controller" and r["target"] == new
               and f'"fault_id": "{f.fault_id}"' in r["detail"] for r in rows)


def test_replication_link_timeout_shrinks_the_isr(run, cluster):
    leader = leader_id(cluster, T)
    # Followers fetch from the leader through its internal proxy: stall it.
    f = toxics.LinkToxic(toxics.timeout(0),
                         toxics.proxies_of(sel.node(leader), (toxics.REPLICATION,)))
    f.inject(run.ctx)
    assert f.detail["proxies"] == [f"broker-{leader}-internal"]
    # A follower that has all the data stays in the ISR without fetching: write some.
    assert produce(cluster, T, 5, acks="1", partition=0)[0] == 5
    seen = []

    def followers_out():
        seen.append(sorted(isr_of(cluster, T)))
        return seen[-1] == [leader]
    try:
        poll_for(followers_out, timeout_s=30, what="followers out of the ISR")
    except TimeoutError:
        raise AssertionError(f"ISR of {T}-0 (leader {leader}) seen: {seen[-5:]}; toxics: "
                             f"{run.ctx.toxiproxy.toxics(f'broker-{leader}-internal')}") from None
    f.heal(run.ctx)


def test_replication_latency_slows_acks_all(run, cluster):
    base, _ = elapsed(lambda: produce(cluster, T, 1, partition=0))
    f = toxics.LinkToxic(toxics.latency(800, 50), toxics.proxies_of(None, (toxics.REPLICATION,)))
    f.inject(run.ctx)
    assert len(f.detail["proxies"]) == 3
    slow, (acked, _) = elapsed(lambda: produce(cluster, T, 1, partition=0, timeout_s=20))
    f.heal(run.ctx)
    # acks=all waits for a follower fetch, which now crosses a slow link
    assert acked == 1 and slow > base + 0.7, (base, slow)
