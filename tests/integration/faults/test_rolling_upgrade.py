"""Rolling upgrade 3.9.x → 4.x on a real KRaft cluster, with a producer writing
throughout: every node is re-created on the 4.x image keeping its data, then the
metadata version is raised, and every acknowledged record is still there."""
from __future__ import annotations

import threading
import time

from confluent_kafka import Consumer, Producer, TopicPartition

from clusters.docker_cluster import DockerCluster
from clusters.spec import ClusterSpec
from clusters.versions import resolve_version
from core.history import EventLog, read_table
from faults.context import context_for
from faults.rolling import RollingUpgrade


class BackgroundProducer:
    """acks=all, idempotent; remembers every acknowledged value."""

    def __init__(self, bootstrap: str, topic: str):
        self.acked: set[str] = set()
        self.errors: list[str] = []
        self._stop = threading.Event()
        self._producer = Producer({"bootstrap.servers": bootstrap, "acks": "all",
                                   "enable.idempotence": True, "linger.ms": 5,
                                   "delivery.timeout.ms": 300000, "log_level": 0})
        self._thread = threading.Thread(target=self._run, args=(topic,), daemon=True)

    def _on_delivery(self, err, msg):
        if err is None:
            self.acked.add(msg.value().decode())
        else:
            self.errors.append(str(err))

    def _run(self, topic: str) -> None:
        i = 0
        while not self._stop.is_set():
            try:
                self._producer.produce(topic, value=f"v-{i}".encode(), on_delivery=self._on_delivery)
                i += 1
            except BufferError:
                pass
            self._producer.poll(0.005)

    def __enter__(self):
        self._thread.start()
        return self

    def __exit__(self, *exc):
        self._stop.set()
        self._thread.join(10)
        self._producer.flush(120)


def read_values(cluster, topic: str, partitions: int) -> set[str]:
    c = Consumer({"bootstrap.servers": cluster.bootstrap_servers(), "group.id": "check",
                  "enable.auto.commit": False, "log_level": 0})
    ends = {p: c.get_watermark_offsets(TopicPartition(topic, p), timeout=10)[1]
            for p in range(partitions)}
    c.assign([TopicPartition(topic, p, 0) for p in range(partitions)])
    seen, done = set(), set()
    deadline = time.monotonic() + 60
    while len(done) < partitions and time.monotonic() < deadline:
        for m in c.consume(1000, timeout=1):
            if m.error() is None:
                seen.add(m.value().decode())
                if m.offset() + 1 >= ends[m.partition()]:
                    done.add(m.partition())
        done |= {p for p, e in ends.items() if e == 0}
    c.close()
    return seen


def test_rolling_upgrade_39_to_4_keeps_data_under_load(tmp_path):
    old, new = resolve_version("3.9"), resolve_version("4")
    spec = ClusterSpec.kraft_combined("3.9").with_config(
        {"replica.lag.time.max.ms": "5000", "min.insync.replicas": "2"})
    with DockerCluster(spec) as cluster, EventLog(tmp_path, cluster.run_id) as events:
        cluster.create_topic("t", 3, 3)
        ctx = context_for(cluster, events)
        upgrade = RollingUpgrade("4")
        with BackgroundProducer(cluster.bootstrap_servers(), "t") as producer:
            time.sleep(3)
            upgrade.inject(ctx)
            time.sleep(3)
        assert all(n.image == cluster.nodes()[0].image for n in cluster.nodes())
        assert all(new.version in n.image for n in cluster.nodes())
        assert all(n.container.attrs["Config"]["Env"].count(f"KAFKA_VERSION={new.version}") == 1
                   for n in cluster.nodes())
        described = cluster.brokers()[0].exec(
            f"{ctx.kafka_java} org.apache.kafka.tools.FeatureCommand "
            "--bootstrap-server localhost:9092 describe").output
        metadata = next(line for line in described.splitlines() if "metadata.version" in line)
        assert f"FinalizedVersionLevel: {new.line}-" in metadata, described
        cluster.wait_healthy(120)
        assert len(producer.acked) > 1000, "the producer should have kept writing"
        missing = producer.acked - read_values(cluster, "t", 3)
        assert not missing, f"{len(missing)} acknowledged records lost in the upgrade"
        upgrade.heal(ctx)
    rows = read_table(tmp_path, "events").to_pylist()
    assert [r["kind"] for r in rows if r["name"] == "rolling-upgrade"] == ["fault", "heal"]
    assert old.version != new.version
