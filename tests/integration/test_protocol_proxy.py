"""The Kafka protocol proxy on a real cluster's client links (librdkafka clients on the
host, through toxiproxy, then the proxy, then the brokers)."""
from __future__ import annotations

import dataclasses
import json
import subprocess
import sys
import time
import uuid

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition

from clusters.kafka_requests import ERROR_CODES, PRODUCE
from clusters.protocol_proxy import DROP_RESPONSE, ERROR, Rule
from clusters.spec import ClusterSpec
from core.history import read_table

TOPIC = "proto"


@pytest.fixture(scope="module")
def cluster():
    from clusters.docker_cluster import DockerCluster
    spec = (ClusterSpec.kraft_combined("3.9").with_name("proto").with_heap(256)
            .with_log_dir_size(32).with_toxiproxy("client"))
    c = DockerCluster(dataclasses.replace(spec, protocol_proxy=True)).start()
    try:
        c.create_topic(TOPIC, partitions=3, replication_factor=3,
                       configs={"min.insync.replicas": "2"})
        yield c
    finally:
        c.stop()


def _produce(cluster, values: list[str], **conf) -> list[str]:
    """Send each value (key = value, so partitions spread) and return the errors."""
    p = Producer({"bootstrap.servers": cluster.bootstrap_servers(), "acks": "all",
                  "linger.ms": 5, "request.timeout.ms": 2000, "message.timeout.ms": 30000,
                  "retry.backoff.ms": 100, **conf})
    errors: list[str] = []
    for v in values:
        p.produce(TOPIC, key=v, value=v,
                  on_delivery=lambda err, msg: errors.append(err.name()) if err else None)
    assert p.flush(40) == 0, "records still in flight after 40 s"
    return errors


def _read_all(cluster, within_s: float = 90) -> list[str]:
    """Every record of the topic, read from the start; fails naming how many it read if
    the log's end is not reached `within_s` (CI once read none of the last test's 40 in
    the 40 s this loop had: a slow reader is not a lost record)."""
    c = Consumer({"bootstrap.servers": cluster.bootstrap_servers(), "group.id": uuid.uuid4().hex,
                  "auto.offset.reset": "earliest", "enable.auto.commit": False})
    try:
        parts = [TopicPartition(TOPIC, p) for p in range(3)]
        ends = [c.get_watermark_offsets(tp, timeout=10)[1] for tp in parts]
        c.assign(parts)
        out, want, deadline = [], sum(ends), time.monotonic() + within_s
        errors: list[str] = []
        while len(out) < want and time.monotonic() < deadline:
            for msg in c.consume(100, timeout=0.5):
                if msg.error():
                    errors.append(msg.error().name())
                else:
                    out.append(msg.value().decode())
        assert len(out) >= want, (f"read {len(out)} of the log's {want} records in {within_s} s "
                                  f"(ends {ends}; consumer errors {errors[-5:]})")
        return out
    finally:
        c.close()


def test_clients_stay_on_the_proxy_for_every_leader(cluster):
    errors = _produce(cluster, [f"a-{i}" for i in range(60)])
    assert errors == []
    leaders = {p.leader for p in cluster.partitions(TOPIC)}
    seen = cluster.protocol_proxy.requests_seen
    assert leaders == {1, 2, 3}
    # Metadata names toxiproxy's addresses, toxiproxy forwards to the proxy: every
    # leader's Produce requests went through it, not around it.
    assert all(seen[(b, "Produce")] > 0 for b in leaders), seen
    assert sum(n for (_, api), n in seen.items() if api == "Metadata") > 0


def test_error_answers_are_read_by_the_client_and_retried(cluster):
    events: list[dict] = []
    code = ERROR_CODES["NOT_LEADER_OR_FOLLOWER"]
    cluster.protocol_proxy.set_rules("t-error", [Rule("e", ERROR, api_keys=frozenset({PRODUCE}),
                                                      count=3, error_code=code)], events.append)
    try:
        errors = _produce(cluster, [f"b-{i}" for i in range(30)])
    finally:
        used = cluster.protocol_proxy.clear_rules("t-error")
    assert errors == []
    assert used == {"e": 3} and len(events) == 3
    assert {e["api"] for e in events} == {"Produce"} and all(e["error_code"] == 6 for e in events)


def test_dropped_produce_responses_do_not_duplicate_with_idempotence(cluster):
    events: list[dict] = []
    cluster.protocol_proxy.set_rules("t-drop", [Rule("d", DROP_RESPONSE,
                                                     api_keys=frozenset({PRODUCE}), count=2)],
                                     events.append)
    values = [f"c-{i}" for i in range(40)]
    try:
        # socket.timeout.ms: how long librdkafka waits for a Produce response
        errors = _produce(cluster, values, **{"enable.idempotence": True,
                                              "socket.timeout.ms": 3000})
    finally:
        cluster.protocol_proxy.clear_rules("t-drop")
    assert errors == [] and len(events) == 2
    read = [v for v in _read_all(cluster) if v.startswith("c-")]
    assert sorted(read) == sorted(values), "lost or duplicated under dropped responses"


def test_indeterminate_produce_scenario(tmp_path):
    """The scenario end to end (`harness run`, about 45 s of cluster and a verify): the
    history holds each dropped Produce response as an event of the fault, and the
    checker finds nothing duplicated or lost with idempotence."""
    runs = tmp_path / "runs"
    done = subprocess.run([sys.executable, "-m", "harness.cli", "run", "--plain", "--runs-dir",
                           str(runs), "indeterminate-produce"], capture_output=True, text=True,
                          timeout=400)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    run_dir = next(d for d in runs.iterdir() if d.is_dir())
    events = read_table(run_dir, "events").to_pylist()
    fault = next(e for e in events if e["kind"] == "fault" and e["name"] == "protocol")
    fault_id = json.loads(fault["detail"])["fault_id"]
    dropped = [json.loads(e["detail"]) for e in events if e["name"] == "protocol-request"]
    assert dropped, "no Produce response was dropped"
    assert all(d["fault_id"] == fault_id and d["api"] == "Produce"
               and d["action"] == "drop_response" and d["broker"] == int(fault["target"][-1])
               and d["records"] > 0 and d["client_id"] == "p0" for d in dropped), dropped
    heal = next(e for e in events if e["kind"] == "heal" and e["name"] == "protocol")
    assert json.loads(heal["detail"])["matched"] == len(dropped)
    summary = json.loads((run_dir / "report" / "summary.json").read_text())
    assert summary["counts"]["acked"] > 5000
    assert summary["anomalies"]["duplicate"] == 0 and summary["anomalies"]["lost"] == 0
