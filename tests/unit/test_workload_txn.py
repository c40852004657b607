"""The transactional producers' history: the Java producer's lines, late delivery
reports, a fatal client error and its policy (stop, or a new incarnation)."""
import json
import time

import pytest
from confluent_kafka import KafkaError

from core.errors import SpecError
from core.history import EventLog, HistoryWriter, read_table
from workloads import producer_churn
from workloads.java_txn import ARCHIVE, CLASS_DIR, TxnLineConverter, java_args, run_opts
from workloads.process import FATAL_RESTART_EXIT
from workloads.producer import ReconcileResult, _ended_by
from workloads.spec import ProducerSpec
from workloads.transactional import End, FatalClientError, _write_txn, indefinite

T = 1_700_000_000_000_000

# TxnProducer.java's lines: txn 0 committed, txn 1 aborted on purpose (one callback
# arrives after its end), txn 2 ends on a fatal error; txn 3 begins and never ends.
LINES = [
    {"ev": "start", "ts": T, "name": "p0"},
    {"ev": "begin", "ts": T + 1, "txn": 0, "first": 0, "n": 2},
    {"ev": "ack", "ts": T + 2, "seq": 0, "p": 1, "o": 10, "err": None},
    {"ev": "ack", "ts": T + 3, "seq": 1, "p": 2, "o": 4, "err": None},
    {"ev": "end", "ts": T + 4, "txn": 0, "outcome": "committed", "error": None, "call": None,
     "indefinite": False},
    {"ev": "begin", "ts": T + 5, "txn": 1, "first": 2, "n": 2},
    {"ev": "ack", "ts": T + 6, "seq": 2, "p": 0, "o": 7, "err": None},
    {"ev": "retry", "ts": T + 7, "txn": 1, "call": "commitTransaction", "error": "TimeoutException"},
    {"ev": "end", "ts": T + 8, "txn": 1, "outcome": "aborted", "error": "ABORTED_ON_PURPOSE",
     "call": None, "indefinite": False},
    {"ev": "ack", "ts": T + 9, "seq": 3, "p": 0, "o": 8, "err": None},
    {"ev": "begin", "ts": T + 10, "txn": 2, "first": 4, "n": 1},
    {"ev": "ack", "ts": T + 11, "seq": 4, "p": 1, "o": 12, "err": None},
    {"ev": "end", "ts": T + 12, "txn": 2, "outcome": "unknown", "error": "KafkaException",
     "call": "abortTransaction", "indefinite": False},
    {"ev": "fatal", "ts": T + 13, "txn": 2, "call": "abortTransaction", "error": "KafkaException",
     "reason": "InvalidTxnStateException: invalid state", "policy": "restart"},
    {"ev": "reinit", "ts": T + 14, "txn": 2, "reason": "x"},
    {"ev": "begin", "ts": T + 15, "txn": 3, "first": 5, "n": 2},
    {"ev": "ack", "ts": T + 16, "seq": 5, "p": 2, "o": None, "err": "TimeoutException"},
]


def test_java_txn_lines_to_history(tmp_path):
    w = HistoryWriter(tmp_path, "produced", "r", writer_name="p0-java")
    ev = EventLog(tmp_path, "r", writer_name="ev")
    conv = TxnLineConverter("p0", "t", "r-p0", w, ev)
    for line in ["[2026-11-25] INFO log line (org.apache.kafka)", *map(json.dumps, LINES)]:
        conv.feed(line)
    result = conv.finish()
    w.close()
    ev.close()
    rows = {r["seq"]: r for r in read_table(tmp_path, "produced").to_pylist()}
    got = {s: (r["status"], r["partition"], r["offset"], r["txn_seq"], r["txn_outcome"], r["error"])
           for s, r in rows.items()}
    assert got == {
        0: ("acked", 1, 10, 0, "committed", None), 1: ("acked", 2, 4, 0, "committed", None),
        2: ("failed", 0, None, 1, "aborted", "ABORTED_ON_PURPOSE"),
        3: ("failed", 0, None, 1, "aborted", "ABORTED_ON_PURPOSE"),      # the late callback
        4: ("indeterminate", 1, None, 2, "unknown", "KafkaException"),
        5: ("indeterminate", 2, None, 3, "unknown", "TimeoutException"),  # never ended
        6: ("indeterminate", None, None, 3, "unknown", "NO_DELIVERY_REPORT")}
    assert {r["record_id"] for r in rows.values()} == {f"p0-{s}" for s in range(7)}
    assert all(r["txn_id"] == "r-p0" for r in rows.values())
    assert rows[2]["send_ts_us"] == T + 5 and rows[2]["ack_ts_us"] == T + 6
    assert result == ReconcileResult(announced=7, recorded=5, indeterminate=2)
    events = [(e["name"], json.loads(e["detail"]).get("txn_seq"))
              for e in read_table(tmp_path, "events").to_pylist()]
    assert sorted(events) == [("client-fatal", 2), ("producer-reinit", 2), ("transaction", 0),
                              ("transaction", 1), ("transaction", 2), ("txn-retry", 1)]
    assert conv.exit_fatal["policy"] == "restart"


def test_java_args_carry_every_knob():
    spec = ProducerSpec(name="p0", topic="t", duration_s=20, client="java", transactions={
        "records_per_txn": 4, "partitions_per_txn": 2, "intra_txn_delay_ms": 50,
        "abort_rate": 0.1, "on_indefinite": "reinit"}, on_fatal="restart")
    args = dict(zip(java_args(spec)[::2], java_args(spec)[1::2], strict=True))
    assert args == {"--topic": "t", "--name": "p0", "--records-per-txn": "4",
                    "--partitions-per-txn": "2", "--delay-ms": "50", "--record-size": "100",
                    "--records": "-1", "--duration-ms": "20000", "--end-timeout-ms": "30000",
                    "--rate": "0", "--abort-rate": "0.1", "--on-indefinite": "reinit",
                    "--seed": "0", "--on-fatal": "restart"}


def test_java_run_opts_map_the_class_archive_only_when_its_training_wrote_one(tmp_path):
    provider = "-Dorg.apache.kafka.automatic.config.providers=x"       # a secured cluster's
    without = run_opts(tmp_path, provider).split()
    assert "-XX:TieredStopAtLevel=1" in without and provider in without
    assert not any(o.startswith("-XX:SharedArchiveFile") for o in without)
    assert "-Dlog4j2.configurationFile=/out/log4j2.yaml" in without
    (tmp_path / ARCHIVE).write_bytes(b"")
    assert f"-XX:SharedArchiveFile={CLASS_DIR}/{ARCHIVE}" in run_opts(tmp_path).split()


class _Recorder:
    """What DeliveryRecorder.take/complete return, for a few reports."""

    def __init__(self, reports):
        self.reports = reports

    def take(self):
        cols = {k: [r[k] for r in self.reports] for k in ("seq", "partition", "offset", "error",
                                                         "acked_by", "status", "send_ts_us",
                                                         "ack_ts_us")}
        self.reports = []
        return cols

    def complete(self, cols):
        cols["record_id"] = [f"p0-{s}" for s in cols["seq"]]
        return cols

    def row_constants(self):
        return {"producer": "p0", "topic": "t"}

    def seed_leaders(self, producer):
        pass


def _report(seq, offset, error=None):
    return {"seq": seq, "partition": 0, "offset": offset, "error": error, "acked_by": 1,
            "status": "acked", "send_ts_us": T, "ack_ts_us": T + 1}


def test_a_late_delivery_report_is_written_with_its_own_transaction(tmp_path):
    w = HistoryWriter(tmp_path, "produced", "r", writer_name="p0")
    starts, ends = [0, 3], [End("aborted", "ABORTED_ON_PURPOSE"), End("committed")]
    # seq 2 (transaction 0, aborted) reported only after transaction 1 (3..4) committed
    timed_out = _write_txn(_Recorder([_report(3, 5), _report(2, 4, "_MSG_TIMED_OUT"),
                                      _report(4, 6)]), w, starts, ends, "r-p0")
    w.close()
    rows = {r["seq"]: r for r in read_table(tmp_path, "produced").to_pylist()}
    assert {s: (r["status"], r["offset"], r["txn_seq"], r["txn_outcome"], r["error"])
            for s, r in rows.items()} == {
        2: ("failed", None, 0, "aborted", "_MSG_TIMED_OUT"),
        3: ("acked", 5, 1, "committed", None), 4: ("acked", 6, 1, "committed", None)}
    assert timed_out


def test_indefinite_errors_are_neither_fatal_nor_abortable():
    assert indefinite(KafkaError(KafkaError._TIMED_OUT, retriable=True))
    assert not indefinite(KafkaError(KafkaError.INVALID_TXN_STATE, fatal=True))
    assert not indefinite(KafkaError(KafkaError._MSG_TIMED_OUT, txn_requires_abort=True))


def _events(tmp_path):
    return [(e["name"], json.loads(e["detail"])) for e in read_table(tmp_path, "events").to_pylist()]


def test_fatal_error_policy_stop_is_a_death_and_restart_asks_for_the_next(tmp_path):
    err = FatalClientError(KafkaError(KafkaError.INVALID_TXN_STATE, "Failed to end transaction",
                                      fatal=True), "commit_transaction", 57)
    ev = EventLog(tmp_path, "r", writer_name="ev")
    spec = ProducerSpec(topic="t", duration_s=5, transactions={}, on_fatal="restart")
    with pytest.raises(SystemExit) as ended:
        _ended_by(err, spec, ev)
    assert ended.value.code == FATAL_RESTART_EXIT
    _ended_by(err, spec.model_copy(update={"on_fatal": "stop"}), ev)
    ev.close()
    [(name, detail)] = _events(tmp_path)
    assert name == "workload-died" and detail["fatal"] is True
    assert "INVALID_TXN_STATE" in detail["error"]


class _FakeIncarnation:
    """A producer incarnation that ends at once: the first with a fatal-restart exit."""
    made: list = []

    def __init__(self, spec, run, clients_version=None):
        self.spec, self.result = spec, None
        self.txn_id = (spec.transactions.transactional_id or "run-p0")
        self.code = FATAL_RESTART_EXIT if not _FakeIncarnation.made else 0
        _FakeIncarnation.made.append(self)
        self.ends_at = time.monotonic() + (0.1 if self.code else 30)

    def start(self):
        return self

    def is_alive(self):
        return time.monotonic() < self.ends_at

    @property
    def exitcode(self):
        return None if self.is_alive() else self.code

    def wait(self, timeout=None):
        self.result = self.result or ReconcileResult(3, 3, 0)
        return True

    def stop(self, timeout=None):
        self.ends_at = 0
        return self.wait()

    kill = stop


def test_a_fatal_error_with_policy_restart_starts_the_next_incarnation(monkeypatch):
    _FakeIncarnation.made = []
    monkeypatch.setattr(producer_churn, "incarnation", _FakeIncarnation)
    events = []

    class Run:
        class events_:
            @staticmethod
            def emit(kind, name, target, **detail):
                events.append((name, detail))
        events = events_
    spec = ProducerSpec(topic="t", duration_s=20, transactions={}, on_fatal="restart")
    p = producer_churn.ChurningProducer(spec, Run()).start()
    deadline = time.monotonic() + 5
    while len(_FakeIncarnation.made) < 2 and time.monotonic() < deadline:
        assert p.exitcode is None            # being replaced: not an exit the runner judges
        time.sleep(0.05)
    assert [i.spec.name for i in _FakeIncarnation.made] == ["p0", "p0.1"]
    assert _FakeIncarnation.made[1].spec.transactions.transactional_id == "run-p0"
    assert events == [("producer-restart", {"incarnation": 1, "previous": "p0", "producer": "p0.1",
                                            "after": "fatal client error"})]
    p.stop()
    assert p.fatal_restarts == 1


def test_java_client_refusals_name_the_field():
    with pytest.raises(SpecError, match="producer.keys"):
        ProducerSpec(topic="t", duration_s=5, client="java", keys="fixed", transactions={})
    with pytest.raises(SpecError, match="producer.transactions.partitions_per_txn"):
        ProducerSpec(topic="t", duration_s=5, transactions={"partitions_per_txn": 0})


class _FatalProducer:
    """A transactional producer whose commit needs an abort, and whose abort (or, with
    fatal_in="flush", its first flush) meets INVALID_TXN_STATE: from then on every flush
    raises the fatal error too, as confluent-kafka's does."""
    fatal_in = "abort"

    def __init__(self, conf):
        self.fatal = False

    def _fatal_error(self):
        self.fatal = True
        from confluent_kafka import KafkaException
        return KafkaException(KafkaError(KafkaError.INVALID_TXN_STATE, "Failed to end transaction",
                                         fatal=True))

    def init_transactions(self, timeout=None):
        pass

    begin_transaction = init_transactions

    def produce(self, *args, **kw):
        pass

    def poll(self, timeout=0):
        return 0

    def flush(self, timeout=0):
        if self.fatal or self.fatal_in == "flush":
            raise self._fatal_error()
        return 0

    def commit_transaction(self, timeout):
        from confluent_kafka import KafkaException
        raise KafkaException(KafkaError(KafkaError._MSG_TIMED_OUT, "timed out", txn_requires_abort=True))

    def abort_transaction(self, timeout):
        raise self._fatal_error()


@pytest.mark.parametrize("fatal_in, call", [("abort", "abort_transaction"), ("flush", "flush")])
def test_a_fatal_error_a_flush_raises_still_names_its_transaction(tmp_path, monkeypatch, fatal_in, call):
    """confluent-kafka raises a fatal error from flush: the transaction it ended still gets
    its event, and the client-fatal event names the call and the transaction (both were
    null when the flush's exception escaped the loop)."""
    from workloads import transactional

    monkeypatch.setattr(_FatalProducer, "fatal_in", fatal_in)
    monkeypatch.setattr(transactional, "Producer", _FatalProducer)
    spec = ProducerSpec(topic="t", duration_s=5, transactions={"records_per_txn": 2}, on_fatal="stop")
    events = EventLog(tmp_path, "r", writer_name="ev")
    writer = HistoryWriter(tmp_path, "produced", "r", writer_name="p0")
    intent = type("Intent", (), {"announce": lambda self, *a: None})()
    recorder = _Recorder([])
    recorder.on_delivery = None
    loop = transactional._TransactionLoop(spec, {"bootstrap.servers": "x"}, intent, recorder,
                                          writer, events, "r")
    with pytest.raises(FatalClientError) as e:
        loop.one_transaction(2)
    assert (e.value.call, e.value.txn_seq) == (call, 0)
    writer.close()
    events.close()
    said = _events(tmp_path)
    assert ("transaction", 0, "unknown") in [(n, d.get("txn_seq"), d.get("outcome")) for n, d in said]
    [fatal] = [d for n, d in said if n == "client-fatal"]
    assert (fatal["call"], fatal["txn_seq"], fatal["error"]) == (call, 0, "INVALID_TXN_STATE")
