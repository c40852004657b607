"""Consumer group process management without Kafka (closed loopback port): members
start, a hard kill reaps the process and is on the timeline, a bounce starts a new
incarnation, stop() leaves nothing running."""
import json

import pytest

from core.context import RunContext
from core.history import EventLog, HistoryWriter, read_table
from workloads.consumer import ConsumerGroup, consumer_config
from workloads.spec import ConsumerGroupSpec


def test_consumer_config_modes():
    s = ConsumerGroupSpec(group_id="g", topics="t", commit="auto", static_membership=True,
                          assignment="cooperative-sticky", isolation="read_committed")
    c = consumer_config(s, "c1", "b:9092")
    assert c["enable.auto.commit"] is True and c["group.instance.id"] == "g-c1"
    assert c["partition.assignment.strategy"] == "cooperative-sticky"
    assert c["isolation.level"] == "read_committed"
    e = consumer_config(ConsumerGroupSpec(group_id="g", topics="t"), "c0", "b:9092")
    assert e["enable.auto.commit"] is False and "group.instance.id" not in e
    assert e["partition.assignment.strategy"] == "range"


def test_group_members_are_killed_bounced_and_reaped(tmp_path):
    events = EventLog(tmp_path, "r1", writer_name="t")
    run = RunContext("r1", tmp_path, events, fixed_bootstrap="127.0.0.1:9")
    g = ConsumerGroup(ConsumerGroupSpec(group_id="g", topics="t", members=2), run)
    try:
        g.start()
        assert g.alive("c0") and g.alive("c1")
        g.bounce("c0", clean=False)
        assert g.alive("c0")
        g.kill_member("c1")
        assert not g.alive("c1")
    finally:
        g.stop(timeout=20)
    assert not g.alive("c0") and not g.alive("c1")
    events.close()
    ev = read_table(tmp_path, "events").to_pylist()
    names = [(e["name"], e["target"]) for e in ev]
    assert ("consumer-crash", "c0") in names and ("consumer-crash", "c1") in names
    restart = [json.loads(e["detail"]) for e in ev if e["name"] == "consumer-restart"]
    assert restart == [{"group_id": "g", "incarnation": 1}]
    # the cleanly stopped incarnation wrote its own close event
    closed = [json.loads(e["detail"]) for e in ev if e["name"] == "consumer-closed"]
    assert {(d["incarnation"]) for d in closed} == {1}


def test_append_columns_checks_its_input(tmp_path):
    w = HistoryWriter(tmp_path, "commits", "r1", writer_name="x")
    with pytest.raises(ValueError):
        w.append_columns({"offset": [1, 2], "partition": [0]})
    with pytest.raises(ValueError):
        w.append_columns({"nope": [1]})
    w.append_columns({"offset": [5, 6], "partition": [0, 1]}, consumer="c0", topic="t",
                     ok=True, ts_us=1)
    w.append_columns({})                                   # nothing to add
    w.close()
    rows = read_table(tmp_path, "commits").to_pylist()
    assert [(r["partition"], r["offset"], r["group_id"], r["run_id"]) for r in rows] == [
        (0, 5, None, "r1"), (1, 6, None, "r1")]


class _Committed:
    def __init__(self, topic, partition, offset, error=None):
        self.topic, self.partition, self.offset, self.error = topic, partition, offset, error


class _Coordinator:
    """Answers commits as a coordinator mid-rebalance does: the first fails whole
    (ILLEGAL_GENERATION), the next fails one partition, the rest succeed."""

    def __init__(self):
        self.calls = []

    def commit(self, offsets, asynchronous):
        from confluent_kafka import KafkaError, KafkaException
        self.calls.append(sorted((tp.partition, tp.offset) for tp in offsets))
        if len(self.calls) == 1:
            raise KafkaException(KafkaError(KafkaError.ILLEGAL_GENERATION))
        bad = KafkaError(KafkaError.REBALANCE_IN_PROGRESS) if len(self.calls) == 2 else None
        return [_Committed(tp.topic, tp.partition, tp.offset, bad if tp.partition == 1 else None)
                for tp in offsets]

    def close(self):
        pass


def test_an_offset_whose_commit_failed_is_committed_by_the_next_attempt(tmp_path):
    """Claim 12: a commit that failed mid-rebalance (cooperative-sticky: ILLEGAL_GENERATION)
    used to forget its offsets; a partition read no further was then never committed and
    its next owner read it all again. Revoked partitions are let go either way."""
    from workloads.consumer import _Member

    m = _Member(ConsumerGroupSpec(group_id="g", topics="t", commit="after-processing"), "c0", 0,
                "127.0.0.1:9", str(tmp_path), "r1")
    m.consumer.close()
    m.consumer = fake = _Coordinator()
    m.processed = {("t", 0): 10, ("t", 1): 20}
    m.commit()                                   # fails whole: both kept
    assert m.processed == {("t", 0): 10, ("t", 1): 20}
    m.commit()                                   # partition 1 fails: it alone is kept
    assert m.processed == {("t", 1): 20}
    m.processed[("t", 2)] = 30
    m._on_revoke(None, [_Committed("t", 1, -1), _Committed("t", 2, -1)])
    assert fake.calls[-1] == [(1, 20), (2, 30)] and m.processed == {}
    m.close()
    rows = read_table(tmp_path, "commits").to_pylist()
    assert [(r["partition"], r["offset"], r["ok"]) for r in rows] == [
        (0, 10, False), (1, 20, False), (0, 10, True), (1, 20, False), (1, 20, True), (2, 30, True)]
