"""The Java transactional producer (`client: java`): Kafka's own client, so that
transactions v2 (KIP-890 part 2, a 4.x client on a 4.x cluster) can be compared with
v1 (librdkafka, a 3.x Java client, or a cluster held at transaction.version 1).

`java/TxnProducer.java` is compiled here against the kafka-clients jar of the image it
runs in, with a class archive, cached (java_build.prepared; the run's images phase makes
it, before the load), and run in a one-off container of that image on the cluster's network
(java_clients._run_tool: labelled, always removed). Its duration and rate are counted
from its first transaction, after initTransactions (as librdkafka's producer's are).
Its JSON lines become the same history as librdkafka's producer writes
(TxnLineConverter):

- `begin {txn, first, n}` is the intent: seqs first..first+n-1 belong to transaction
  txn; their send_ts_us is that line's time (the client reports no per-record send time);
- `ack {seq, p, o, err}` is a delivery callback; its row is written when its
  transaction's `end {outcome}` is known: committed -> acked (offset kept), aborted ->
  failed, unknown -> indeterminate. A callback after its transaction's end is written
  at once with that outcome;
- `retry`, `reinit`, `fatal` become `client` events (`txn-retry`, `producer-reinit`,
  `client-fatal`), every end a `transaction` event;
- at the end, a seq announced with no row is indeterminate (NO_DELIVERY_REPORT), txn
  outcome unknown. acked_by is null (the callback names no broker).

Exit codes: 0 done, 3 a fatal error with policy stop (a death), 75 with policy restart
(ChurningProducer starts `p0.1` with the same transactional.id). Client log lines
(TransactionManager at DEBUG) go to `workloads/java-<name>/stderr.log`.
"""
from __future__ import annotations

import uuid
from bisect import bisect_right
from pathlib import Path
from typing import TYPE_CHECKING, Any

from core.history import CLIENT_FATAL, WORKLOAD_DIED, EventLog, HistoryWriter
from workloads import classify, java_build
from workloads.java_build import JavaProgram
from workloads.java_clients import _parse
from workloads.java_process import JavaProcess
from workloads.process import FATAL_RESTART_EXIT
from workloads.producer import NO_REPORT, ReconcileResult
from workloads.spec import ProducerSpec, txn_id_of

if TYPE_CHECKING:
    from core.context import RunContext

TXN_PRODUCER = JavaProgram(
    source=Path(__file__).parent / "java" / "TxnProducer.java", main="TxnProducer",
    class_dir="/opt/harness-txn", cache_name="txn-producer",
    train_args=("--topic", "t", "--name", "train", "--records-per-txn", "1"),
    train_conf=(("bootstrap.servers", "127.0.0.1:1"), ("transactional.id", "train"), ("max.block.ms", 500)),
    debug_loggers=("org.apache.kafka.clients.producer.internals.TransactionManager",))
MAIN, CLASS_DIR, ARCHIVE = TXN_PRODUCER.main, TXN_PRODUCER.class_dir, TXN_PRODUCER.archive
FATAL_STOP_EXIT = 3
_STATUS = {"committed": classify.ACKED, "aborted": classify.FAILED,
           "unknown": classify.INDETERMINATE}
_EVENTS = {"retry": "txn-retry", "reinit": "producer-reinit", "fatal": CLIENT_FATAL}


class TxnLineConverter:
    """TxnProducer's lines -> `produced` rows and `client` events (module docstring)."""

    def __init__(self, producer: str, topic: str, txn_id: str, writer: HistoryWriter,
                 events: EventLog | None = None):
        self.producer, self.topic, self.txn_id = producer, topic, txn_id
        self.writer, self.events = writer, events
        self.txns: dict[int, dict[str, Any]] = {}     # txn -> first, n, ts, outcome, error
        self.firsts: list[int] = []                   # each begun transaction's first seq
        self.order: list[int] = []                    # and its txn
        self.acks: dict[int, dict[str, Any]] = {}     # seq -> its callback, until written
        self.written: set[int] = set()
        self.announced = 0
        self.exit_fatal: dict[str, Any] | None = None

    def feed(self, line: str) -> None:
        ev = _parse(line)
        if ev is None:
            return
        kind, ts = ev.get("ev"), int(ev.get("ts") or 0)
        if kind == "begin":
            self.txns[ev["txn"]] = {"first": ev["first"], "n": ev["n"], "ts": ts, "outcome": None}
            self.firsts.append(ev["first"])
            self.order.append(ev["txn"])
            self.announced = max(self.announced, ev["first"] + ev["n"])
        elif kind == "ack":
            self.acks[ev["seq"]] = ev
            txn = self._txn_of(ev["seq"])
            if txn is not None and self.txns[txn]["outcome"] is not None:
                self._write(txn, [ev["seq"]])            # a late callback
        elif kind == "end":
            t = self.txns.get(ev["txn"])
            if t is not None:
                t.update(outcome=ev["outcome"], error=ev.get("error"))
                self._write(ev["txn"], [s for s in range(t["first"], t["first"] + t["n"])
                                        if s in self.acks])
            self._event("transaction", ts, txn_seq=ev["txn"], outcome=ev["outcome"],
                        error=ev.get("error"), call=ev.get("call"),
                        indefinite=ev.get("indefinite") or None)
        elif kind in _EVENTS:
            detail = {("txn_seq" if k == "txn" else k): v for k, v in ev.items()
                      if k not in ("ev", "ts")}
            if kind == "fatal":
                self.exit_fatal = detail
            self._event(_EVENTS[kind], ts, **detail)

    def _txn_of(self, seq: int) -> int | None:
        i = bisect_right(self.firsts, seq) - 1        # transactions begin in seq order
        if i < 0:
            return None
        txn = self.order[i]
        t = self.txns[txn]
        return txn if seq < t["first"] + t["n"] else None

    def _write(self, txn: int, seqs: list[int], status: str | None = None) -> None:
        t = self.txns[txn]
        status = status or _STATUS[t["outcome"]]
        ok = status == classify.ACKED
        rows = []
        for s in seqs:
            a = self.acks.pop(s)
            rows.append({"producer": self.producer, "seq": s, "record_id": f"{self.producer}-{s}",
                         "topic": self.topic, "partition": a.get("p"),
                         "offset": a.get("o") if ok else None, "status": status,
                         "error": None if ok else (a.get("err") or t["error"]),
                         "send_ts_us": t["ts"], "ack_ts_us": a.get("ts"), "txn_id": self.txn_id,
                         "txn_seq": txn, "txn_outcome": t["outcome"]})
            self.written.add(s)
        self.writer.extend(rows)

    def _event(self, name: str, ts: int, **detail: Any) -> None:
        if self.events is not None:
            self.events.emit("client", name, self.producer, ts_us=ts or None, **detail)

    def finish(self) -> ReconcileResult:
        """Every announced seq without a row: indeterminate (a transaction that never
        ended: outcome unknown; a callback without an end keeps its partition)."""
        recorded, missing = len(self.written), 0
        for txn, t in sorted(self.txns.items()):
            seqs = [s for s in range(t["first"], t["first"] + t["n"]) if s not in self.written]
            if not seqs:
                continue
            if t["outcome"] is None:
                t.update(outcome="unknown", error=NO_REPORT)
            for s in seqs:
                self.acks.setdefault(s, {"err": NO_REPORT})
            self._write(txn, seqs, classify.INDETERMINATE)
            missing += len(seqs)
        return ReconcileResult(self.announced, recorded, missing)


def prepared(image: str, run_id: str) -> Path:
    """TxnProducer's jar and class archive for `image` (java_build.prepared)."""
    return java_build.prepared(TXN_PRODUCER, image, run_id)


def run_opts(prepared_dir: Path, extra: str = "") -> str:
    return java_build.run_opts(TXN_PRODUCER, prepared_dir, extra)


def java_config(spec: ProducerSpec, bootstrap: str, txn_id: str) -> dict[str, Any]:
    t = spec.transactions
    # client.id: its name, as librdkafka's producers have it (what a protocol fault's
    # client_id_prefix picks one producer by)
    return {"bootstrap.servers": bootstrap, "client.id": spec.name,
            "transactional.id": txn_id, "acks": "all",
            "enable.idempotence": True, "transaction.timeout.ms": t.transaction_timeout_ms,
            "delivery.timeout.ms": spec.delivery_timeout_ms,
            "request.timeout.ms": spec.request_timeout_ms, "linger.ms": spec.linger_ms,
            "max.in.flight.requests.per.connection": spec.max_in_flight,
            "max.block.ms": t.end_timeout_ms, **spec.client_config}


def java_args(spec: ProducerSpec) -> list[str]:
    t = spec.transactions
    opts = {"topic": spec.topic, "name": spec.name, "records-per-txn": t.records_per_txn,
            "partitions-per-txn": t.partitions_per_txn or 0, "delay-ms": t.intra_txn_delay_ms,
            "record-size": spec.record_size, "records": spec.records if spec.records is not None else -1,
            "duration-ms": int(spec.duration_s * 1000) if spec.duration_s is not None else -1,
            "end-timeout-ms": t.end_timeout_ms, "rate": spec.rate or 0, "abort-rate": t.abort_rate,
            "on-indefinite": t.on_indefinite, "seed": spec.seed, "on-fatal": spec.on_fatal}
    return [x for k, v in opts.items() for x in (f"--{k}", str(v))]


class JavaTxnProducer:
    """Parent-side handle of one Java producer incarnation (the calls of
    workloads.producer.ProducerProcess): a container run in a thread of ours."""

    def __init__(self, spec: ProducerSpec, run: "RunContext", clients_version: str | None = None):
        self.spec, self.run, self.clients_version = spec, run, clients_version
        self.result: ReconcileResult | None = None
        self.writer = HistoryWriter(run.dir, "produced", run.run_id,
                                    writer_name=f"{spec.name}-{uuid.uuid4().hex[:8]}",
                                    flush_rows=20000, flush_seconds=1.0)
        self.conv = TxnLineConverter(spec.name, spec.topic, self.txn_id, self.writer, run.events)
        self.proc = JavaProcess(
            TXN_PRODUCER, run, spec.name, java_args(spec),
            java_config(spec, run.bootstrap, self.txn_id), self.conv.feed,
            clients_version=clients_version, timeout_s=(spec.duration_s or 600.0) + 300,
            ok_exits=(0, FATAL_STOP_EXIT, FATAL_RESTART_EXIT))

    @property
    def txn_id(self) -> str:
        return txn_id_of(self.spec, self.run.run_id)

    @property
    def error(self) -> str | None:
        return self.proc.error

    def start(self) -> "JavaTxnProducer":
        self._event("producer-start", tool=MAIN, clients_version=self.clients_version)
        self.proc.start()
        return self

    def is_alive(self) -> bool:
        return self.proc.is_alive()

    @property
    def exitcode(self) -> int | None:
        return self.proc.exitcode

    def wait(self, timeout: float | None = None) -> bool:
        if not self.proc.wait(timeout):
            return False
        self._finish()
        return True

    def stop(self, timeout: float | None = None) -> ReconcileResult:
        # SIGTERM: the open transaction ends, then it stops
        self.proc.stop(timeout if timeout is not None else self.spec.delivery_timeout_ms / 1000 + 60)
        return self._finish()

    def kill(self) -> ReconcileResult:
        return self.stop(5.0)

    def _finish(self) -> ReconcileResult:
        if self.result is None:
            self.result = self.conv.finish()
            self.writer.close()
            code = self.exitcode
            self._event("producer-end", exitcode=code, announced=self.result.announced,
                        indeterminate_written=self.result.indeterminate)
            if self.error is not None or code == FATAL_STOP_EXIT:
                fatal = self.conv.exit_fatal or {}
                self._event(WORKLOAD_DIED, workload="producer", exitcode=code,
                            fatal=code == FATAL_STOP_EXIT or None,
                            error=self.error or f"{fatal.get('error')}: {fatal.get('reason')}")
        return self.result

    def _event(self, name: str, **detail: Any) -> None:
        if self.run.events is not None:
            self.run.events.emit("client", name, self.spec.name, **detail)
