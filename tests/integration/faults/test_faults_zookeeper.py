"""ZooKeeper-mode faults on one real 3.9 cluster (three brokers, one
ZooKeeper): controller failover, session expiry, a frozen ZooKeeper."""
from __future__ import annotations

import json
import time

import pytest
from fault_helpers import (
    FAST_ZK,
    Run,
    assert_paired,
    elected_isr_of,
    fail_over_controller,
    poll_for,
    produce,
    started_cluster,
    whole,
)

from clusters.spec import ClusterSpec
from faults import selectors as sel
from faults.controller import ControllerFailover
from faults.disk import DiskFull
from faults.pause import DOCKER, Pause
from faults.process import HARD, Kill
from faults.zookeeper import ZkSessionExpiry

T = "zkfaults"
SESSION_MS = int(FAST_ZK["zookeeper.session.timeout.ms"])

pytestmark = pytest.mark.cluster


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    spec = (ClusterSpec.zookeeper("3.9", brokers=3, zookeepers=1).with_name("zkfaults")
            .with_heap(256).with_log_dir_size(32).with_config(FAST_ZK))
    with started_cluster(spec, tmp_path_factory, T) as c:
        yield c


def test_zookeeper_leader_selector(run, cluster):
    assert [n.name for n in sel.zookeeper_leader(run.ctx)] == ["zk-1"]    # standalone
    assert [n.name for n in sel.quorum_leader(run.ctx)] == ["zk-1"]


@pytest.mark.parametrize("method", ["kill", "isolate"])
def test_zk_mode_controller_failover(run, cluster, method):
    f = fail_over_controller(run, cluster, method, wait_for_new_s=40)
    assert_paired(run.event_rows(), f)


def test_paused_zk_mode_controller_is_replaced_then_heals_to_full_isr(run, cluster):
    """A frozen controller broker (docker pause) stops heartbeating ZooKeeper; once its
    session (SESSION_MS) expires its /controller znode vanishes and another broker wins."""
    poll_for(lambda: cluster.active_controller() is not None, what="an active controller")
    old = cluster.active_controller()
    # session expiry + ZooKeeper's tick slack + the election, with margin for a loaded host
    f = ControllerFailover("pause", wait_for_new_s=SESSION_MS / 1000 * 3 + 20)
    f.inject(run.ctx)
    assert f.detail["previous_controller"] == old.name
    assert cluster.node(old.name).status() == "paused"
    new = f.detail["new_controller"]
    assert new not in (None, old.name), f.detail
    assert cluster.node(new).role == "broker"
    # the election waited for the session to expire (the last heartbeat came at most a
    # third of a session before the pause), not for some unrelated event
    assert f.detail["failover_s"] >= SESSION_MS / 1000 / 2, f.detail
    f.heal(run.ctx)
    assert cluster.node(old.name).status() == "running"
    whole(cluster, 90)
    assert all(set(s.isr) == set(s.replicas) for s in cluster.partitions(T))
    rows = run.event_rows()
    assert_paired(rows, f)
    assert any(r["kind"] == "observe" and r["name"] == "controller" and r["target"] == new
               for r in rows)


@pytest.mark.parametrize("method", ["pause", "partition"])
def test_session_expiry_drops_the_broker_from_the_isr(run, cluster, method):
    f = ZkSessionExpiry(sel.one_follower_of(T, 0), method, session_timeout_ms=SESSION_MS)
    f.inject(run.ctx)                 # returns once the session has surely expired
    broker = f.targets[0] if method == "pause" else next(
        t for t in f.targets if t.role != "zookeeper")
    # The controller saw the broker's ephemeral node vanish and shrank its ISRs. It
    # told the brokers it counts as live: the expired one (cut off from ZooKeeper, not
    # from them) keeps the old ISR, so ask them all (CI 2026-11-26: the admin client
    # asked only the expired broker and the test timed out).
    poll_for(lambda: broker.node_id not in elected_isr_of(cluster, T), timeout_s=20,
             what="ISR without the expired broker")
    f.heal(run.ctx)


def test_frozen_zookeeper_keeps_the_write_path_and_recovers(run, cluster):
    f = Pause(sel.zookeeper_leader, DOCKER)
    f.inject(run.ctx)
    assert cluster.node("zk-1").status() == "paused"
    # Produce still works against existing leaders (no ZooKeeper on the write path).
    assert produce(cluster, T, 3)[0] == 3
    f.heal(run.ctx)


def test_a_broker_started_within_its_old_session_is_started_again(cluster_factory, tmp_path):
    """A ZooKeeper-mode broker killed and started before its session expires exits at
    once (NodeExists: its old registration is still there). The heal starts it again, as
    a supervisor would, until it runs, and its row counts the restarts."""
    spec = (ClusterSpec.zookeeper("3.9", brokers=1, zookeepers=1).with_name("zkrestart")
            .with_heap(256).with_log_dir_size(32)
            .with_config({"zookeeper.session.timeout.ms": "20000"}))
    cluster = cluster_factory(spec)
    run = Run(cluster, tmp_path / "run")
    broker = cluster.brokers()[0]
    f = Kill(sel.node(broker.node_id), HARD)
    f.inject(run.ctx)
    f.heal(run.ctx)
    assert f.heal_notes["restarts_at_start"][broker.name] >= 1, f.heal_notes
    assert "NodeExists" in broker.logs()
    time.sleep(5)                      # a start that exits does so within seconds
    assert broker.status() == "running" and cluster.broker_ready(broker)
    heal = [r for r in run.event_rows() if r["kind"] == "heal"][-1]
    assert json.loads(heal["detail"])["restarts_at_start"] == f.heal_notes["restarts_at_start"]
    assert heal["ts_us"] == f.healed_at_us      # timed at the start that held

    # A broker whose only log dir fails halts without leaving ZooKeeper: the same.
    cluster.create_topic("d", 1, 1)
    disk = DiskFull(sel.node(broker.node_id))
    disk.inject(run.ctx)
    produce(cluster, "d", 50, timeout_s=5, size=2000)
    poll_for(lambda: not broker.is_running(), timeout_s=60, what="the broker to halt")
    disk.heal(run.ctx)
    assert disk.heal_notes["restarts_at_start"][broker.name] >= 1, disk.heal_notes
    assert cluster.broker_ready(broker)
    run.finish()
