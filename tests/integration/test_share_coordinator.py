"""Share groups (KIP-932) on a real 4.3.1 cluster, the cluster side: share.version is 1
without asking, `__share_group_state` takes the harness's sizes, a ShareConsumer reads a
topic, and `share_coordinator_of` names the broker the broker's own computation names
(FindCoordinator v6, and the local fallback when FindCoordinator is refused), with the
topic id the Metadata v12 request read equal to the Admin API's. The share loggers'
DEBUG lines reach the broker logs."""
from __future__ import annotations

import json
import time

from confluent_kafka import Producer, ShareConsumer, TopicCollection
from confluent_kafka.admin import AlterConfigOpType, ConfigEntry, ConfigResource, ResourceType

from clusters.coordinator import SHARE_STATE_TOPIC, CoordinatorError, share_key, share_state_partition
from clusters.log_levels import SHARE_GROUP_LOGGERS
from clusters.observer import MetadataObserver
from clusters.spec import ClusterSpec
from core.history import EventLog, read_table
from faults.context import context_for
from faults.selectors import parse_selector

GROUP, TOPIC, RECORDS = "orders-2", "orders", 30


def finalized_features(cluster) -> dict[str, str]:
    """kafka-features describe, run in a broker: {feature: finalized level}."""
    text = cluster.brokers()[0].exec(["bash", "-c", (
        "java -Xmx256m -cp '/opt/kafka/libs/*' org.apache.kafka.tools.FeatureCommand "
        "--bootstrap-server localhost:9092 describe 2>/dev/null")]).output
    return {line.split()[1]: line.split("FinalizedVersionLevel:")[1].split()[0]
            for line in text.splitlines() if line.startswith("Feature:")}


def _share_consume(cluster) -> int:
    """Records a share group reads from the start of TOPIC (share.auto.offset.reset set on
    the group before it exists, as Kafka's own VerifiableShareConsumer does)."""
    res = ConfigResource(ResourceType.GROUP, GROUP, incremental_configs=[ConfigEntry(
        "share.auto.offset.reset", "earliest", incremental_operation=AlterConfigOpType.SET)])
    for future in cluster.admin().incremental_alter_configs([res]).values():
        future.result(timeout=15)
    consumer = ShareConsumer({"bootstrap.servers": cluster.bootstrap_servers(), "group.id": GROUP,
                              "log_level": 2})
    consumer.subscribe([TOPIC])
    got, deadline = 0, time.monotonic() + 40
    try:
        while got < RECORDS and time.monotonic() < deadline:
            got += sum(1 for m in consumer.poll(1.0) or [] if m.error() is None)
        consumer.commit_sync(15)
    finally:
        consumer.close()
    return got


def _select(ctx, partition: int):
    ctx.begin_selection_notes()
    nodes = parse_selector({"share_coordinator_of": {"group": GROUP, "partition": partition}}, "t")(ctx)
    return [n.node_id for n in nodes], ctx.end_selection_notes()["share_coordinator"]


def _observed_coordinators(cluster, tmp_path) -> dict[int, int]:
    """The observer's share-coordinator events of one sample: {partition: coordinator}."""
    events = EventLog(tmp_path / "run", cluster.run_id, writer_name="t")
    MetadataObserver(cluster, events, topics=[TOPIC],
                     share_watch=[(GROUP, TOPIC, p) for p in range(3)]).sample()
    events.close()
    rows = [json.loads(r["detail"]) for r in read_table(tmp_path / "run", "events").to_pylist()
            if r["name"] == "share-coordinator"]
    return {r["partition"]: r["coordinator"] for r in rows}


def test_share_coordinator_of_is_the_leader_of_the_keys_state_partition(cluster_factory, tmp_path):
    spec = ClusterSpec.from_dict({"version": "4.3.1", "brokers": 3, "log_levels": SHARE_GROUP_LOGGERS})
    cluster = cluster_factory(spec)
    assert finalized_features(cluster)["share.version"] == "1"      # 4.2+: without asking
    cluster.create_topic(TOPIC, 3, 3)
    producer = Producer({"bootstrap.servers": cluster.bootstrap_servers()})
    for i in range(RECORDS):
        producer.produce(TOPIC, value=str(i).encode(), partition=i % 3)
    assert producer.flush(15) == 0
    assert _share_consume(cluster) == RECORDS

    state = cluster.partitions(SHARE_STATE_TOPIC)               # through the Admin API
    assert len(state) == 10 and all(len(p.replicas) == 3 for p in state)
    leaders = {p.partition: p.leader for p in state}
    # librdkafka prints a Uuid in standard base64; Kafka's Uuid.toString (the share
    # coordinator's key, our Metadata reader) is URL-safe: a topic id holding '/' or '+'
    # told them apart in CI
    admin_id = str(cluster.admin().describe_topics(TopicCollection([TOPIC]))[TOPIC]
                   .result(timeout=15).topic_id).replace("+", "-").replace("/", "_")
    ctx = context_for(cluster, share_group_topics={GROUP: [TOPIC]})
    assert ctx.topic_metadata([TOPIC])[TOPIC].topic_id == admin_id
    expected = {p: leaders[share_state_partition(share_key(GROUP, admin_id, p), 10)] for p in range(3)}
    for partition in range(3):
        chosen, note = _select(ctx, partition)
        print(f"{note['key']}: state partition {note['state_partition']}, coordinator {chosen}")
        assert chosen == [expected[partition]] and note["via"] == "FindCoordinator v6"
        assert note["key"] == share_key(GROUP, admin_id, partition)
    assert _observed_coordinators(cluster, tmp_path) == expected

    def refuse(key, kind):
        raise CoordinatorError("FindCoordinator refused: error CLUSTER_AUTHORIZATION_FAILED", 31)
    ctx.coordinator_lookup = refuse
    chosen, note = _select(ctx, 2)
    assert chosen == [leaders[share_state_partition(share_key(GROUP, admin_id, 2), 10)]]
    assert note["via"].startswith("local computation")

    logs = cluster.collect_logs(tmp_path / "logs")
    debug = [line for f in logs for line in open(f, errors="replace") if " DEBUG " in line]
    for package in ("kafka.server.share.", "org.apache.kafka.coordinator.share."):
        assert any(f"({package}" in line for line in debug), package
