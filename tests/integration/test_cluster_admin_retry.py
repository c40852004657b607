"""Admin calls on a fresh or faulted real cluster, and heal-all's check for paused
containers.

`create_topic` right after a cluster reports healthy, and while a broker is
restarting, must succeed (librdkafka answers _DESTROY_BROKER, _TRANSPORT,
NOT_CONTROLLER … meanwhile); a request Kafka refuses for good fails at once.
`leftovers()` must report a container a fault left paused, and heal-all clear it.
"""
from __future__ import annotations

import logging
import threading
import time

import docker.errors
import pytest

from clusters.admin_retry import AdminError
from clusters.docker_cluster import DockerCluster
from clusters.docker_env import docker_client
from clusters.spec import ClusterSpec
from faults import network as net
from faults import selectors as sel
from faults.base import FaultError
from faults.context import context_for
from faults.healall import heal_all, leftovers

SPEC = (ClusterSpec.kraft_combined("3.9").with_name("admin").with_heap(256)
        .with_log_dir_size(32)
        .with_config({"broker.session.timeout.ms": "6000", "broker.heartbeat.interval.ms": "1000",
                      "replica.lag.time.max.ms": "4000"}))
TOPICS_PER_START = 6


def assert_whole(cluster, topic: str, partitions: int, rf: int) -> None:
    states = cluster.partitions(topic)
    assert [s.partition for s in states] == list(range(partitions)), states
    assert all(s.leader is not None and len(s.isr) == rf for s in states), states


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    with DockerCluster(SPEC) as c:
        try:
            yield c
        finally:
            c.collect_logs(tmp_path_factory.mktemp("logs"))


def test_topics_created_the_moment_a_cluster_is_healthy(cluster):
    # The module's cluster has just started: no request has warmed up any client.
    for i in range(TOPICS_PER_START):
        cluster.create_topic(f"fresh-{i}", partitions=3, replication_factor=3,
                             configs={"min.insync.replicas": "2"})
        assert_whole(cluster, f"fresh-{i}", 3, 3)


def test_topics_created_after_each_of_two_more_fresh_starts(cluster_factory):
    for start in range(2):
        c = cluster_factory(SPEC.with_name(f"admin{start}"))
        for i in range(TOPICS_PER_START):
            c.create_topic(f"t{i}", partitions=2, replication_factor=3)
            assert_whole(c, f"t{i}", 2, 3)
        c.stop()


class Creator:
    """Creates topics in threads of their own, so requests land while a broker is down,
    fenced and starting; records each outcome."""

    def __init__(self, cluster):
        self.cluster, self.threads, self.results = cluster, [], {}

    def _create(self, name: str) -> None:
        try:
            self.cluster.create_topic(name, partitions=2, replication_factor=3, timeout=90)
            self.results[name] = None
        except Exception as e:  # noqa: BLE001 - asserted by the test
            self.results[name] = e

    def launch(self, name: str) -> None:
        t = threading.Thread(target=self._create, args=(name,))
        t.start()
        self.threads.append(t)

    def join(self) -> dict:
        for t in self.threads:
            t.join()
        return self.results


def test_topics_created_while_brokers_restart(cluster, caplog):
    caplog.set_level(logging.INFO, logger="clusters.admin_retry")
    creator = Creator(cluster)
    for name, how, stop in (("kafka-2", "clean", lambda n: n.stop(timeout=30)),
                            ("kafka-3", "hard", lambda n: n.kill("SIGKILL"))):
        node = cluster.node(name)
        stop(node)
        creator.launch(f"{how}-just-stopped")
        time.sleep(3)
        creator.launch(f"{how}-down")
        time.sleep(5)                   # past the 6 s session timeout: the broker is fenced
        creator.launch(f"{how}-fenced")
        node.start()
        creator.launch(f"{how}-starting")
        time.sleep(2)
        creator.launch(f"{how}-started")
        cluster.wait_healthy(90)
    results = creator.join()
    assert {k: v for k, v in results.items() if v is not None} == {}
    assert len(results) == 10
    for name in results:
        assert_whole(cluster, name, 2, 3)
    # Which refusals the creates met (KRaft places replicas on a fenced broker when it
    # must, so a restart shows as timeouts and transport errors, if anything).
    print([r.getMessage() for r in caplog.records if "retrying" in r.getMessage()])


def test_a_refused_topic_fails_at_once_with_kafkas_reason(cluster):
    t0 = time.monotonic()
    with pytest.raises(AdminError, match="INVALID_CONFIG"):
        cluster.create_topic("bad-config", 1, 1, configs={"cleanup.policy": "bogus"})
    assert time.monotonic() - t0 < 10


def test_leftovers_reports_a_paused_container_and_heal_all_clears_it(cluster, tmp_path):
    ctx = context_for(cluster)
    node = cluster.node("kafka-2")
    node.pause()                       # what a harness that died mid-fault leaves behind
    try:
        # The container is named after the cluster, not the node's network alias.
        assert docker_client().containers.get(node.container_name).status == "paused"
        with pytest.raises(docker.errors.NotFound):
            docker_client().containers.get(node.name)
        assert "kafka-2: container paused" in leftovers(ctx)
        report = heal_all(ctx, "test")
        assert not report.unhealed
        assert node.status() == "running"
        assert leftovers(ctx) == []
    finally:
        node.unpause()
    cluster.wait_healthy(90)


def test_partition_rules_in_a_paused_container_are_not_reported_healed(cluster):
    ctx = context_for(cluster)
    f = net.Partition(net.isolate(sel.node("kafka-1")))
    f.inject(ctx)
    node = cluster.node("kafka-1")
    node.pause()
    try:
        with pytest.raises(FaultError, match="kafka-1"):
            f.heal(ctx)                 # the rules are still there, behind the freeze
        assert not f.healed and f.fault_id in ctx.active
        report = heal_all(ctx, "test")
        assert f.fault_id in report.healed and not report.unhealed
        assert net.rules_on(node) == [] and leftovers(ctx) == []
    finally:
        node.unpause()
    cluster.wait_healthy(90)
