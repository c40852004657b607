"""Shared helpers and the `run` fixture for the fault integration tests (real clusters)."""
from __future__ import annotations

import contextlib
import time

import pytest
from confluent_kafka import Producer

from core.history import EventLog, read_table
from faults.base import wait_full_isr, wait_until
from faults.context import context_for
from faults.healall import heal_all, leftovers

# Short timeouts so faults show within seconds and the whole set stays short.
FAST = {
    "replica.lag.time.max.ms": "3000",
    "broker.session.timeout.ms": "6000",
    "broker.heartbeat.interval.ms": "1000",
    "zookeeper.session.timeout.ms": "6000",
    # No preferred-leader election: a KRaft controller runs its first imbalance check
    # at once (not after the interval), which would hand leadership straight back to
    # a restarted preferred leader and make "leadership moved" checks race with it.
    "auto.leader.rebalance.enable": "false",
    "leader.imbalance.check.interval.seconds": "3600",
}
FAST_KRAFT = {k: v for k, v in FAST.items() if not k.startswith("zookeeper")}
FAST_ZK = {k: v for k, v in FAST.items() if not k.startswith("broker.")}


def produce(cluster, topic: str, n: int = 10, *, acks: str = "all", timeout_s: float = 8,
            partition: int | None = None, size: int = 100) -> tuple[int, list[str]]:
    """Send n records and wait for them; (acked count, error names)."""
    p = Producer({"bootstrap.servers": cluster.bootstrap_servers(), "acks": acks,
                  "message.timeout.ms": int(timeout_s * 1000),
                  "request.timeout.ms": int(min(timeout_s, 5) * 1000),
                  "socket.connection.setup.timeout.ms": 3000,
                  "linger.ms": 0, "enable.idempotence": False})
    acked, errors = [0], []

    def cb(err, msg):
        if err is None:
            acked[0] += 1
        else:
            errors.append(err.name())
    for i in range(n):
        kw = {"partition": partition} if partition is not None else {}
        p.produce(topic, value=b"x" * size, key=str(i).encode(), on_delivery=cb, **kw)
        p.poll(0)
    p.flush(timeout_s + 5)
    return acked[0], errors


def poll_for(predicate, timeout_s: float = 30, what: str = "the fault's effect"):
    return wait_until(predicate, timeout_s, interval_s=0.5, what=what)


def leader_id(cluster, topic: str, partition: int = 0):
    for s in cluster.partitions(topic, timeout=3):
        if s.partition == partition:
            return s.leader
    return None


def isr_of(cluster, topic: str, partition: int = 0):
    for s in cluster.partitions(topic, timeout=3):
        if s.partition == partition:
            return set(s.isr)
    return set()


def elected_isr_of(cluster, topic: str, partition: int = 0):
    """The partition's ISR as most running brokers report it (the newest leader epoch):
    a broker the controller counts as gone gets no metadata updates and keeps serving
    the old ISR, and the admin client may be asking just that broker."""
    for s in cluster.elected_partitions([topic], timeout=2):
        if s.partition == partition:
            return set(s.isr)
    return set()


class Run:
    """A FaultContext bound to a cluster plus its event log, for one test."""

    def __init__(self, cluster, run_dir):
        self.run_dir = run_dir
        self.events = EventLog(run_dir, cluster.run_id)
        self.ctx = context_for(cluster, self.events, seed=1)
        self.cluster = cluster

    def event_rows(self):
        self.events.flush()
        return read_table(self.run_dir, "events").to_pylist()

    def finish(self, isr_timeout_s: float = 90):
        """Heal whatever is left, then require a clean, whole cluster."""
        heal_all(self.ctx, "test-teardown")
        self.events.close()
        assert leftovers(self.ctx) == []
        whole(self.cluster, isr_timeout_s)


def whole(cluster, timeout_s: float = 90):
    """Every broker registered, one active controller, every partition with full ISR."""
    cluster.wait_healthy(timeout_s)
    wait_full_isr(cluster, timeout_s)


def can_connect(node, ip: str, port: int = 9093, timeout_s: float = 2) -> bool:
    """Whether `node` opens a TCP connection to ip:port (a silent drop times out)."""
    r = node.exec(["bash", "-c", f"timeout {timeout_s} bash -c '</dev/tcp/{ip}/{port}' "
                                 f"2>/dev/null && echo open || echo closed"])
    return r.output.strip().endswith("open")


@pytest.fixture
def run(request, tmp_path):
    cluster = request.getfixturevalue("cluster")
    r = Run(cluster, tmp_path / "run")
    whole(cluster, 90)                    # each test starts from a whole cluster
    yield r
    r.finish()


def fail_over_controller(run, cluster, method: str, wait_for_new_s: float):
    """Kill, pause or isolate the active controller; a new one must appear. Healed."""
    from faults.controller import ControllerFailover
    poll_for(lambda: cluster.active_controller() is not None, what="an active controller")
    f = ControllerFailover(method, wait_for_new_s=wait_for_new_s)
    f.inject(run.ctx)
    assert f.detail["new_controller"] not in (None, f.detail["previous_controller"])
    f.heal(run.ctx)
    return f


def assert_paired(rows, fault):
    mine = [r for r in rows if f'"fault_id": "{fault.fault_id}"' in r["detail"]
            and r["kind"] in ("fault", "heal")]
    assert [r["kind"] for r in mine] == ["fault", "heal"], mine


def elapsed(fn):
    t0 = time.monotonic()
    result = fn()
    return time.monotonic() - t0, result


def metric_sum(cluster, name: str, nodes=None) -> float:
    """Sum of one metric over nodes, each from the node's own view (a node cut
    off from the controller has stale metadata, its own counters are not)."""
    total = 0.0
    for n in nodes if nodes is not None else cluster.brokers():
        try:
            total += cluster.metrics(n).get(name, 0.0)
        except Exception:  # noqa: BLE001 - a frozen or cut node does not answer
            pass
    return total


ISR_SHRINKS = "kafka_server_replicamanager_isrshrinkspersec"
LEADER_COUNT = "kafka_server_replicamanager_leadercount"
FENCED = "kafka_controller_kafkacontroller_fencedbrokercount"


@contextlib.contextmanager
def started_cluster(spec, tmp_path_factory, topic: str):
    """A module's cluster: started with `topic` (3 partitions, RF 3, min ISR 2), its
    logs kept when the module ends, everything removed afterwards."""
    from clusters.docker_cluster import DockerCluster
    with DockerCluster(spec) as c:
        c.create_topic(topic, 3, 3, {"min.insync.replicas": "2"}, timeout=120)
        try:
            yield c
        finally:
            c.collect_logs(tmp_path_factory.mktemp("logs"))
