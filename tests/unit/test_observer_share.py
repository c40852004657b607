"""The observer's `share-coordinator` events: one when a watched share-partition's state
partition first has a leader, one each time that leader changes, none for the other
`__share_group_state` partitions (and no leader events for that topic at all)."""
import json

from clusters import observer as obs
from clusters.api import PartitionState
from clusters.coordinator import SHARE_STATE_TOPIC, share_key, share_state_partition
from clusters.topic_metadata import TopicInfo
from core.history import EventLog, read_table

TOPIC_ID = "ASNFZ4mrze8P7cuph2VDIQ"
KEY = share_key("orders-2", TOPIC_ID, 2)
STATE_PARTITION = share_state_partition(KEY, 10)              # 5 (Java: 1438853925 % 10)


class Broker:
    def __init__(self, node_id):
        self.node_id, self.name = node_id, f"kafka-{node_id}"


class ElectedCluster:
    """Answers elected_partitions from `self.state` (state partition -> leader)."""

    def __init__(self):
        self.asked, self.state = [], {}

    def elected_partitions(self, topics=None, timeout=1.0):
        self.asked.append(list(topics or []))
        parts = [PartitionState("orders", p, 1, (1, 2, 3), (1, 2, 3), 0) for p in range(3)]
        return parts + [PartitionState(SHARE_STATE_TOPIC, p, leader, (1, 2, 3), (1, 2, 3), 0)
                        for p, leader in self.state.items()]

    def active_controller(self):
        return None

    def brokers(self):
        return [Broker(i) for i in (1, 2, 3)]

    def broker(self, node_id):
        return Broker(node_id)

    def bootstrap_servers(self):
        return "127.0.0.1:1"

    def client_config(self):
        return {}


def test_share_coordinator_changes_are_observed(tmp_path, monkeypatch):
    monkeypatch.setattr(obs, "describe_topics", lambda bootstrap, topics, **kw: {
        t: TopicInfo(t, TOPIC_ID if t == "orders" else "x", 0 if t == "orders" else 3, {})
        for t in topics})
    cluster, events = ElectedCluster(), EventLog(tmp_path, "R1", writer_name="t")
    observer = obs.MetadataObserver(cluster, events, topics=["orders"],
                                    share_watch=[("orders-2", "orders", 2)])
    observer.sample()                                          # no state topic yet: nothing
    cluster.state = {p: 1 for p in range(10)}
    observer.sample()
    observer.sample()                                          # unchanged: nothing
    cluster.state[(STATE_PARTITION + 1) % 10] = 2              # another partition: nothing
    observer.sample()
    cluster.state[STATE_PARTITION] = 3
    observer.sample()
    events.close()
    rows = read_table(tmp_path, "events").to_pylist()
    shares = [(r["target"], json.loads(r["detail"])) for r in rows if r["name"] == "share-coordinator"]
    common = {"group_id": "orders-2", "topic": "orders", "partition": 2, "state_partition": STATE_PARTITION}
    assert shares == [("kafka-1", {**common, "coordinator": 1, "previous": None}),
                      ("kafka-3", {**common, "coordinator": 3, "previous": 1})]
    assert cluster.asked[0] == ["orders", SHARE_STATE_TOPIC]
    assert not [r for r in rows if r["name"] in ("leader", "isr") and SHARE_STATE_TOPIC in r["detail"]]
