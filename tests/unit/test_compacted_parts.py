"""The compacted family's pieces without Kafka: tombstones decided from the seed and the
seq alone (so a reconciler rebuilds them), versions and tombstones in the rows of
delivery reports and of a killed writer's reconciliation, the cleaner's checkpoint file,
and the topic settings the section sets or refuses."""
from __future__ import annotations

import json

from core.history import HistoryWriter, read_table
from families.compacted.drain import parse_checkpoint
from families.compacted.section import TOPIC_SETTINGS, compacted, topic_configs
from workloads.producer import DeliveryRecorder, IntentLog, reconcile
from workloads.records import (
    RECORD_ID_HEADER,
    ValueMaker,
    is_tombstone,
    record_id_of_headers,
)
from workloads.spec import ProducerSpec


class Msg:
    def __init__(self, value, offset):
        self._v, self._o = value, offset

    def value(self): return self._v
    def partition(self): return 0
    def offset(self): return self._o
    def latency(self): return 0.001


def test_tombstones_follow_the_rate_and_the_seed():
    n = 20000
    share = sum(is_tombstone(s, 0.1, 7) for s in range(n)) / n
    assert 0.09 < share < 0.11
    assert [is_tombstone(s, 0.1, 7) for s in range(50)] == [is_tombstone(s, 0.1, 7) for s in range(50)]
    assert [is_tombstone(s, 0.1, 7) for s in range(200)] != [is_tombstone(s, 0.1, 8) for s in range(200)]
    assert not any(is_tombstone(s, 0.0, 7) for s in range(100))
    assert all(is_tombstone(s, 1.0, 7) for s in range(100))
    assert not is_tombstone(3, None, 7)
    assert record_id_of_headers([(RECORD_ID_HEADER, b"cw0-12")]) == "cw0-12"
    assert record_id_of_headers(None) is None


def test_a_compacted_writers_rows_carry_version_and_tombstone(tmp_path):
    spec = ProducerSpec(name="cw0", topic="s", keys="per_key", key_count=4, seed=3, records=12,
                        tombstone_rate=0.5)
    rec = DeliveryRecorder(spec)
    make = ValueMaker("cw0", 100, "per_key", 4)
    for s in range(12):
        if is_tombstone(s, 0.5, 3):
            rec.on_delivery_of(s, None, Msg(None, s))      # no value to read the seq from
        else:
            rec.on_delivery(None, Msg(make(s), s))
    w = HistoryWriter(tmp_path, "produced", "r1", writer_name="cw0-x")
    rec.write(w)
    w.close()
    rows = sorted(read_table(tmp_path, "produced").to_pylist(), key=lambda r: r["seq"])
    assert [r["version"] for r in rows] == [s // 4 for s in range(12)]
    assert [r["tombstone"] for r in rows] == [is_tombstone(s, 0.5, 3) for s in range(12)]
    assert any(r["tombstone"] for r in rows) and not all(r["tombstone"] for r in rows)
    assert rows[5]["key"] == "k1" and make(5).startswith(b"cw0-5 k1:1 ")


def test_a_killed_writers_reconciled_rows_say_version_and_tombstone(tmp_path):
    work = tmp_path / "workloads"
    work.mkdir()
    intent = work / "cw0-w.intent"
    intent.with_suffix(".json").write_text(json.dumps({
        "producer": "cw0", "topic": "s", "keys": "per_key", "key_count": 3,
        "writer_name": "cw0-w", "run_id": "r1", "txn_id": None, "tombstone_rate": 0.3,
        "seed": 9}))
    log = IntentLog(intent)
    log.announce(0, 10, 1000)
    log.close()
    assert reconcile(tmp_path, intent).indeterminate == 10
    rows = sorted(read_table(tmp_path, "produced").to_pylist(), key=lambda r: r["seq"])
    assert [r["version"] for r in rows] == [s // 3 for s in range(10)]
    assert [r["tombstone"] for r in rows] == [is_tombstone(s, 0.3, 9) for s in range(10)]
    assert {r["status"] for r in rows} == {"indeterminate"}


def test_the_cleaners_checkpoint_file():
    text = "0\n3\nstate 0 1620\nstate 1 1980\n__consumer_offsets 7 12\n"
    assert parse_checkpoint(text) == {("state", 0): 1620, ("state", 1): 1980,
                                      ("__consumer_offsets", 7): 12}
    assert parse_checkpoint("") == {} and parse_checkpoint("1\n0\n") == {}


def test_the_section_sets_the_cleaners_settings_and_keeps_the_topics_own():
    c = compacted(0, {"topic": "s"}, "t")
    configs, refusal = topic_configs({"min.insync.replicas": "2", "delete.retention.ms": "60000"}, c)
    assert refusal is None
    assert configs["cleanup.policy"] == "compact" and configs["delete.retention.ms"] == "60000"
    assert configs["min.insync.replicas"] == "2"
    assert {k: configs[k] for k in TOPIC_SETTINGS if k != "delete.retention.ms"} == {
        k: v for k, v in TOPIC_SETTINGS.items() if k != "delete.retention.ms"}
    assert topic_configs({"cleanup.policy": "compact,delete"}, c)[1] is None
    assert topic_configs({"cleanup.policy": "delete"}, c)[1][0] == "cleanup.policy"
    assert topic_configs({"segment.ms": "600000"}, c)[1][0] == "segment.ms"
    assert c.producer(30, 5).tombstone_rate == 0.1 and c.producer(30, 5).keys == "per_key"
