"""Producer history rows without Kafka: fake delivery reports, the intent log and
reconcile, and a real producer process SIGKILLed while its records are in flight
(the bootstrap is a closed loopback port, so nothing can ever be delivered)."""
import json
import time

from confluent_kafka import KafkaError as E

from core.context import RunContext
from core.history import HistoryWriter, read_table
from workloads.producer import DeliveryRecorder, IntentLog, ProducerProcess, read_intents, reconcile, reconcile_run
from workloads.records import ValueMaker, key_for, record_id_of, seq_of_value
from workloads.spec import ProducerSpec


class FakeMsg:
    def __init__(self, value, partition=0, offset=0, latency=0.002):
        self._v, self._p, self._o, self._l = value, partition, offset, latency

    def value(self): return self._v
    def partition(self): return self._p
    def offset(self): return self._o
    def latency(self): return self._l


def test_values_carry_the_record_id():
    make = ValueMaker("p0", 100)
    v = make(123)
    assert len(v) == 100 and v.startswith(b"p0-123 ")
    assert record_id_of(v) == "p0-123" and seq_of_value(v, 2) == 123
    pk = ValueMaker("p1", 20, "per_key", 4)(10)
    assert pk.startswith(b"p1-10 k2:2 ") and record_id_of(pk) == "p1-10"
    assert len(ValueMaker("p0", 5)(123456)) > 5          # never truncates the record_id
    assert record_id_of(b"7.42") == "j7-42"              # Java VerifiableProducer value
    assert record_id_of(b"hello world") is None and record_id_of(None) is None
    assert key_for("fixed", 4, 9) == "k1" and key_for("none", 4, 9) is None


def test_delivery_reports_become_rows(tmp_path):
    spec = ProducerSpec(name="p0", topic="t", records=4, keys="fixed", key_count=2)
    rec = DeliveryRecorder(spec)
    make = ValueMaker("p0", 100)
    rec.on_delivery(None, FakeMsg(make(0), 1, 10))
    rec.on_delivery(E(E._MSG_TIMED_OUT), FakeMsg(make(1), 2, -1001))
    rec.on_delivery(E(E.MSG_SIZE_TOO_LARGE), FakeMsg(make(2), -1, -1001, None))
    rec.on_delivery(None, FakeMsg(make(3), 0, -1))        # acks=0: success, no offset
    w = HistoryWriter(tmp_path, "produced", "r1", writer_name="p0-x")
    rec.write(w)
    w.close()
    rows = sorted(read_table(tmp_path, "produced").to_pylist(), key=lambda r: r["seq"])
    assert [r["status"] for r in rows] == ["acked", "indeterminate", "failed", "acked"]
    assert [r["record_id"] for r in rows] == ["p0-0", "p0-1", "p0-2", "p0-3"]
    assert [r["key"] for r in rows] == ["k0", "k1", "k0", "k1"]
    assert rows[0]["partition"] == 1 and rows[0]["offset"] == 10 and rows[0]["error"] is None
    assert rows[1]["offset"] is None and rows[1]["error"] == "_MSG_TIMED_OUT"
    assert rows[2]["partition"] is None and rows[2]["error"] == "MSG_SIZE_TOO_LARGE"
    assert rows[3]["offset"] is None
    assert all(r["run_id"] == "r1" and r["topic"] == "t" and r["producer"] == "p0" for r in rows)
    assert rows[0]["ack_ts_us"] - rows[0]["send_ts_us"] == 2000
    assert rows[2]["send_ts_us"] == rows[2]["ack_ts_us"]   # no latency reported


def test_acks_0_keeps_no_offset_even_when_the_client_reports_one(tmp_path):
    rec = DeliveryRecorder(ProducerSpec(name="p0", topic="t", records=1, acks="0",
                                        enable_idempotence=False))
    rec.on_delivery(None, FakeMsg(ValueMaker("p0", 100)(0), 0, 4711))
    assert rec.take()["offset"] == [None]


def _meta(tmp_path, writer_name="p0-w", txn_id=None):
    work = tmp_path / "workloads"
    work.mkdir(exist_ok=True)
    intent = work / f"{writer_name}.intent"
    intent.with_suffix(".json").write_text(json.dumps({
        "producer": "p0", "topic": "t", "keys": "fixed", "key_count": 3,
        "writer_name": writer_name, "run_id": "r1", "txn_id": txn_id}))
    return intent


def test_reconcile_writes_indeterminate_for_unreported_seqs(tmp_path):
    intent = _meta(tmp_path)
    log = IntentLog(intent)
    log.announce(0, 5, 111)
    log.announce(5, 5, 222)
    log.close()
    with open(intent, "ab") as fh:
        fh.write(b"\x01\x02\x03")                         # a torn last entry is ignored
    assert read_intents(intent).shape == (2, 4)
    w = HistoryWriter(tmp_path, "produced", "r1", writer_name="p0-w")
    w.append_columns({"seq": [0, 1, 2, 6], "record_id": ["p0-0", "p0-1", "p0-2", "p0-6"],
                      "status": ["acked"] * 4, "send_ts_us": [1] * 4},
                     producer="p0", topic="t")
    w.close()
    res = reconcile(tmp_path, intent)
    assert (res.announced, res.recorded, res.indeterminate) == (10, 4, 6)
    rows = {r["seq"]: r for r in read_table(tmp_path, "produced").to_pylist()}
    assert sorted(rows) == list(range(10))                 # none missing
    for s in (3, 4, 5, 7, 8, 9):
        r = rows[s]
        assert r["status"] == "indeterminate" and r["error"] == "NO_DELIVERY_REPORT"
        assert r["record_id"] == f"p0-{s}" and r["key"] == f"k{s % 3}" and r["partition"] is None
        assert r["send_ts_us"] == (111 if s < 5 else 222) and r["txn_outcome"] is None
    # idempotent: a second reconcile (e.g. reconcile_run) writes nothing more
    assert reconcile(tmp_path, intent).indeterminate == 0
    assert reconcile_run(tmp_path) == []


def test_reconcile_transactional_intents(tmp_path):
    intent = _meta(tmp_path, "t0-w", txn_id="run-t0")
    log = IntentLog(intent)
    log.announce(0, 3, 5, txn_seq=0)
    log.close()
    res = reconcile(tmp_path, intent)
    assert res.indeterminate == 3
    rows = read_table(tmp_path, "produced").to_pylist()
    assert {(r["txn_id"], r["txn_seq"], r["txn_outcome"], r["status"]) for r in rows} == {
        ("run-t0", 0, "unknown", "indeterminate")}


def test_killed_producer_process_leaves_every_record_in_history(tmp_path):
    # 127.0.0.1:9 (discard port, normally closed): nothing is ever delivered, so every
    # record is in flight when we SIGKILL the process.
    spec = ProducerSpec(name="p0", topic="t", records=3000, rate=5000)
    p = ProducerProcess(spec, RunContext("r1", tmp_path, None, fixed_bootstrap="127.0.0.1:9")).start()
    try:
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and len(read_intents(p.intent_path)) < 3:
            time.sleep(0.1)
        assert len(read_intents(p.intent_path)) >= 3, "producer process never started sending"
        res = p.kill()
    finally:
        if p.is_alive():
            p.kill()
    assert not p.is_alive()
    rows = read_table(tmp_path, "produced").to_pylist()
    seqs = sorted(r["seq"] for r in rows)
    assert seqs == list(range(res.announced)) and res.announced > 0
    assert all(r["status"] == "indeterminate" for r in rows)
    assert res.indeterminate == res.announced


def test_stopped_producer_times_out_its_records_itself(tmp_path):
    spec = ProducerSpec(name="p1", topic="t", records=50, request_timeout_ms=500,
                        delivery_timeout_ms=1500, linger_ms=0)
    p = ProducerProcess(spec, RunContext("r1", tmp_path, None, fixed_bootstrap="127.0.0.1:9")).start()
    try:
        assert p.wait(60), "producer did not end by itself"
    finally:
        if p.is_alive():
            p.kill()
    assert p.result.indeterminate == 0                     # the process wrote every row itself
    rows = read_table(tmp_path, "produced").to_pylist()
    assert sorted(r["seq"] for r in rows) == list(range(50))
    assert {(r["status"], r["error"]) for r in rows} == {("indeterminate", "_MSG_TIMED_OUT")}
