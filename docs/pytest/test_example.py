"""Real-Kafka tests with the kafka-harness pytest plugin: copy this file into your repo.

Set-up: install kafka-harness into the environment pytest runs in (the plugin is
registered by its `pytest11` entry point, nothing to import), on a machine made
ready by the README's `bash scripts/setup.sh` (Docker engine, images; root, since
a node's log dir is a tmpfs mount). Then:

    pytest -m kafka_chaos docs/pytest/test_example.py          # only the real-cluster tests
    pytest -m "not kafka_chaos"                                  # everything else, no Docker needed
    pytest -n 2 -m kafka_chaos                                   # pytest-xdist: a cluster per worker

Every test that uses `kafka_cluster` or `chaos_run` is marked `kafka_chaos` by the
plugin. `kafka_cluster` lives for the session (one per distinct spec per worker)
unless the marker says `fresh=True`; a test that kills a broker should ask for one.
"""
from __future__ import annotations

import pytest
from confluent_kafka import Consumer, Producer


def _round_trip(cluster, topic: str, n: int = 100) -> list[bytes]:
    cluster.create_topic(topic, partitions=1, replication_factor=1)
    producer = Producer({"bootstrap.servers": cluster.bootstrap_servers(), "acks": "all"})
    for i in range(n):
        producer.produce(topic, f"{topic}-{i}".encode())
    assert producer.flush(30) == 0
    consumer = Consumer({"bootstrap.servers": cluster.bootstrap_servers(), "group.id": topic,
                         "auto.offset.reset": "earliest"})
    consumer.subscribe([topic])
    seen: list[bytes] = []
    try:
        for _ in range(120):
            msg = consumer.poll(1.0)
            if msg is not None and msg.error() is None:
                seen.append(msg.value())
            if len(seen) >= n:
                break
    finally:
        consumer.close()
    return seen


# A cluster with the plugin's defaults (KRaft combined, 3.9, one broker), shared by
# every test of the session that asks for the same spec.
def test_round_trip(kafka_cluster):
    assert _round_trip(kafka_cluster, "example") == [f"example-{i}".encode() for i in range(100)]


# The same test on two Kafka versions: indirect params are ClusterSpec fields.
@pytest.mark.parametrize("kafka_cluster", [{"version": "3.9"}, {"version": "4"}], indirect=True,
                         ids=["kafka-3.9", "kafka-4"])
def test_round_trip_per_version(kafka_cluster):
    assert len(_round_trip(kafka_cluster, "versions")) == 100


# A whole chaos scenario (a built-in name or your own YAML file) with overrides:
# its own cluster, load, faults, and the reconciler's verdict.
def test_quick_scenario_holds(chaos_run):
    result = chaos_run("quick", "workload.duration_s=20")
    assert result.status == "passed", (result.reason, result.summary and result.summary["verdict"])
    assert result.summary["anomalies"]["lost"] == 0
