"""The verifiable producer: one process per instance, every record's outcome recorded.

How no record goes missing, even under SIGKILL (the design in one place):

1. Before handing a batch of seqs to the client, the producer process appends
   an *intent* entry (first_seq, count, send_ts_us, txn_seq) to
   `<run_dir>/workloads/<writer>.intent` with an unbuffered os.write. Data
   written by write(2) is in the kernel when the call returns, so it survives
   a SIGKILL of the process.
2. Rows are written to `produced` only when an outcome is known (delivery
   report, or transaction end), through HistoryWriter (part files, tmp+rename).
3. Whenever the process ends, however it ends, the parent runs `reconcile()`:
   every seq in the intent log that has no `produced` row from this writer gets
   an `indeterminate` row (error NO_DELIVERY_REPORT, send_ts from the intent).
   That covers records in flight at the kill *and* acked rows that were still
   in the unflushed writer buffer: the harness no longer knows their outcome.
   A seq that was announced but not yet handed to the client when the process
   died is also `indeterminate` (never sent, but we cannot tell; the reconciler
   simply never sees it consumed).
4. If the harness itself is SIGKILLed, the children notice (parent pid changes),
   purge and write their own rows; `reconcile_run(run_dir)` finishes any intent
   log left without a `.reconciled` marker (call it before verifying).
"""
from __future__ import annotations

import json
import os
import struct
import time
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import pyarrow.parquet as pq
from confluent_kafka import KafkaException, Producer

from core.history import CLIENT_FATAL, WORKLOAD_DIED, EventLog, HistoryWriter, now_us, table_dir
from workloads import classify
from workloads.process import FATAL_RESTART_EXIT, WorkerProcess, died_detail, parent_gone
from workloads.records import RECORD_ID_HEADER, ValueMaker, is_tombstone, key_for, seq_of_value
from workloads.spec import ProducerSpec, txn_id_of
from workloads.transactional import FatalClientError, run_transactions

if TYPE_CHECKING:
    from core.context import RunContext

# How often librdkafka reports its own view of each partition's leader (its
# statistics), from which a delivery's `acked_by` is read (the history spec): the
# broker this client sent the request to, which is the deposed leader when one cut off
# from the quorum still takes writes.
LEADER_STATS_INTERVAL_MS = 100
INTENT = struct.Struct("<qqqq")      # first_seq, count, send_ts_us, txn_seq (-1: none)
SEND_BATCH = 1000                     # seqs per intent entry when unthrottled
NO_REPORT = "NO_DELIVERY_REPORT"


def producer_config(spec: ProducerSpec, bootstrap: str) -> dict[str, Any]:
    conf: dict[str, Any] = {
        "bootstrap.servers": bootstrap,
        # its name: what a protocol fault's client_id_prefix picks one producer by
        "client.id": spec.name,
        "acks": spec.acks,
        "enable.idempotence": spec.enable_idempotence,
        "max.in.flight.requests.per.connection": spec.max_in_flight,
        "linger.ms": spec.linger_ms,
        "compression.type": spec.compression,
        "delivery.timeout.ms": spec.delivery_timeout_ms,
        "request.timeout.ms": spec.request_timeout_ms,
        # Bounds what can be in flight, and so what a kill makes indeterminate.
        "queue.buffering.max.messages": 100000,
    }
    conf["statistics.interval.ms"] = LEADER_STATS_INTERVAL_MS
    if spec.retries is not None:
        conf["retries"] = spec.retries
    if spec.batch_size is not None:
        conf["batch.size"] = spec.batch_size
    conf.update(spec.client_config)
    return conf


class IntentLog:
    """Append-only, unbuffered: an entry is in the kernel before produce() is called."""

    def __init__(self, path: Path):
        self._fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)

    def announce(self, first_seq: int, count: int, ts_us: int, txn_seq: int = -1) -> None:
        os.write(self._fd, INTENT.pack(first_seq, count, ts_us, txn_seq))

    def close(self) -> None:
        os.close(self._fd)


def read_intents(path: Path) -> np.ndarray:
    """Intent entries as an (n, 4) int64 array; a torn last entry is ignored."""
    data = path.read_bytes() if path.exists() else b""
    whole = len(data) - len(data) % INTENT.size
    return np.frombuffer(data[:whole], dtype="<i8").reshape(-1, 4)


_ERROR_NAMES: dict[int, str] = {}


def _error_name(code: int) -> str:
    name = _ERROR_NAMES.get(code)
    if name is None:
        name = _ERROR_NAMES[code] = classify.error_name(code)
    return name


class ClientLeaders:
    """Each partition's leader as this client knows it (librdkafka's statistics, every
    LEADER_STATS_INTERVAL_MS): the broker it sends that partition's records to. A
    change is written as a `client` event `client-leader`, so the timeline shows when
    a producer stopped writing to a deposed leader."""

    def __init__(self, producer: str, topic: str, events: EventLog | None = None):
        self.producer, self.topic, self.events = producer, topic, events
        self.leader: dict[int, int] = {}

    def seed(self, producer, timeout_s: float = 5.0) -> None:
        """The leaders in the client's metadata of the topic, asked for before the first
        send. Its statistics name a topic's leaders only from the first report after its
        first record: a delivery before that had no acked_by (seen in CI, 3 000 records
        at 3 000/s). Without an answer, the statistics name them later."""
        try:
            topic = producer.list_topics(self.topic, timeout=timeout_s).topics.get(self.topic)
        except KafkaException:
            return
        if topic is None or topic.error is not None:
            return
        for p in topic.partitions.values():
            self._learn(p.id, p.leader, None)

    def on_stats(self, stats_json: str) -> None:
        try:
            parts = json.loads(stats_json)["topics"][self.topic]["partitions"]
        except (KeyError, TypeError, ValueError):
            return                           # the topic is not known yet
        for key, p in parts.items():
            self._learn(int(key), p.get("leader", -1), p.get("leader_epoch"))

    def _learn(self, partition: int, leader: int | None, epoch: int | None) -> None:
        if partition < 0 or leader is None or leader < 0 or self.leader.get(partition) == leader:
            return
        if self.events is not None:
            self.events.emit("client", "client-leader", self.producer, topic=self.topic,
                             partition=partition, leader=leader, leader_epoch=epoch,
                             previous=self.leader.get(partition))
        self.leader[partition] = leader


class DeliveryRecorder:
    """Collects delivery reports column-wise (hot path), turns them into rows."""

    def __init__(self, spec: ProducerSpec, leaders: ClientLeaders | None = None):
        self.spec = spec
        self.client_leaders = leaders
        self.leaders = leaders.leader if leaders is not None else {}
        self._name_len = len(spec.name)
        # Under acks=0 the broker answers nothing, yet librdkafka reports offsets for some
        # records (seen: 0..8002 for a quarter of them); they are not log positions, and
        # kept they read as `overwritten`. The offset stays null, as classify.py says.
        self._offsets = spec.acks != "0"
        self._reset()

    def _reset(self) -> None:
        self.seqs: list[int] = []
        self.partitions: list[int | None] = []
        self.offsets: list[int | None] = []
        self.codes: list[int | None] = []
        self.send_ts: list[int] = []
        self.ack_ts: list[int] = []
        self.acked_by: list[int | None] = []

    def seed_leaders(self, producer) -> None:
        """Learn the leaders before the first send (ClientLeaders.seed)."""
        if self.client_leaders is not None:
            self.client_leaders.seed(producer)

    def __len__(self) -> int:
        return len(self.seqs)

    def on_delivery(self, err, msg) -> None:
        self.on_delivery_of(seq_of_value(msg.value(), self._name_len), err, msg)

    def on_delivery_of(self, seq: int, err, msg) -> None:
        """A report whose seq the caller knows (a tombstone: its value is null)."""
        now = now_us()
        self.seqs.append(seq)
        lat = msg.latency()
        self.send_ts.append(now - int(lat * 1e6) if lat is not None else now)
        self.ack_ts.append(now)
        p = msg.partition()
        self.partitions.append(p if p is not None and p >= 0 else None)
        self.acked_by.append(self.leaders.get(p) if err is None else None)
        if err is None:
            o = msg.offset()
            # acks=0: success without an offset (see classify.py).
            self.offsets.append(o if self._offsets and o is not None and o >= 0 else None)
            self.codes.append(None)
        else:
            self.offsets.append(None)
            self.codes.append(err.code())

    def local_failure(self, seq: int, code: int) -> None:
        """produce() itself refused the record: it never left the client."""
        now = now_us()
        for col, v in ((self.seqs, seq), (self.partitions, None), (self.offsets, None),
                       (self.codes, code), (self.send_ts, now), (self.ack_ts, None),
                       (self.acked_by, None)):
            col.append(v)

    def take(self) -> dict[str, list]:
        """Columns of every report since the last take (status/error derived)."""
        codes = self.codes
        n = len(codes)
        if codes.count(None) == n:          # the common case: every record acked
            status, error = [classify.ACKED] * n, [None] * n
        else:
            status = [classify.status_of_code(c) for c in codes]
            error = [None if c is None else _error_name(c) for c in codes]
        cols = {"seq": self.seqs, "partition": self.partitions, "offset": self.offsets,
                "send_ts_us": self.send_ts, "ack_ts_us": self.ack_ts,
                "status": status, "error": error, "acked_by": self.acked_by}
        self._reset()
        return cols

    def row_constants(self) -> dict[str, Any]:
        return {"producer": self.spec.name, "topic": self.spec.topic}

    def complete(self, cols: dict[str, list]) -> dict[str, list]:
        """Add record_id and key columns (derived from seq)."""
        name, spec = self.spec.name, self.spec
        cols["record_id"] = [f"{name}-{s}" for s in cols["seq"]]
        if spec.keys != "none":
            cols["key"] = [key_for(spec.keys, spec.key_count, s) for s in cols["seq"]]
        if spec.tombstone_rate is not None:
            cols.update(compacted_columns(cols["seq"], spec.key_count, spec.tombstone_rate,
                                          spec.seed))
        return cols

    def write(self, writer: HistoryWriter) -> None:
        if self.seqs:
            writer.append_columns(self.complete(self.take()), **self.row_constants())


def compacted_columns(seqs, key_count: int, rate: float, seed: int) -> dict[str, list]:
    """A compacted writer's version (its key's own sequence, as the value says) and
    tombstone flag of each seq: both functions of the seq, so a reconciler rebuilds them."""
    return {"version": [s // key_count for s in seqs],
            "tombstone": [is_tombstone(s, rate, seed) for s in seqs]}


def _produce_one(produce, topic: str, s: int, value: bytes, key, recorder: "DeliveryRecorder",
                 spec: ProducerSpec) -> None:
    """One produce() call; a tombstone has a null value and carries its record_id in a
    header, and its report is told its seq (there is no value to read it from)."""
    if spec.tombstone_rate and is_tombstone(s, spec.tombstone_rate, spec.seed):
        produce(topic, None, key, headers=[(RECORD_ID_HEADER, f"{spec.name}-{s}".encode())],
                on_delivery=lambda err, msg, s=s: recorder.on_delivery_of(s, err, msg))
    else:
        produce(topic, value, key, on_delivery=recorder.on_delivery)


def _produce_loop(stop_event, parent_pid: int, spec: ProducerSpec, producer, intent: IntentLog,
                  recorder: DeliveryRecorder, writer: HistoryWriter) -> None:
    make_value = ValueMaker(spec.name, spec.record_size, spec.keys, spec.key_count)
    keys = None if spec.keys == "none" else [f"k{i}".encode() for i in range(spec.key_count)]
    topic, cb, produce, poll = spec.topic, recorder.on_delivery, producer.produce, producer.poll
    compacted = spec.tombstone_rate is not None
    started = time.monotonic()
    seq = 0
    last_check = 0.0
    while True:
        now = time.monotonic()
        elapsed = now - started
        if spec.records is not None and seq >= spec.records:
            break
        if spec.duration_s is not None and elapsed >= spec.duration_s:
            break
        if now - last_check > 0.2:
            last_check = now
            if stop_event.is_set() or parent_gone(parent_pid):
                break
        n = SEND_BATCH
        if spec.rate is not None:
            n = min(n, int(elapsed * spec.rate) + 1 - seq)
            if n <= 0:
                poll(min(0.01, (seq - elapsed * spec.rate) / spec.rate))
                recorder.write(writer)
                writer.maybe_flush()
                continue
        if spec.records is not None:
            n = min(n, spec.records - seq)
        intent.announce(seq, n, now_us())
        for s in range(seq, seq + n):
            value = make_value(s)
            key = keys[s % spec.key_count] if keys else None
            while True:
                try:
                    if compacted:
                        _produce_one(produce, topic, s, value, key, recorder, spec)
                    else:
                        produce(topic, value, key, on_delivery=cb)
                    break
                except BufferError:           # local queue full: serve reports, retry
                    poll(0.01)
                    recorder.write(writer)
                except Exception as e:        # KafkaException: refused before sending
                    code = e.args[0].code() if e.args and hasattr(e.args[0], "code") else -1
                    recorder.local_failure(s, code)
                    break
        seq += n
        poll(0)
        recorder.write(writer)


def finish_producer(producer, recorder: DeliveryRecorder, writer: HistoryWriter,
                    wait_s: float) -> None:
    """Wait up to wait_s for outstanding reports, then purge: every record gets a report."""
    remaining = producer.flush(wait_s)
    if remaining:
        producer.purge(in_queue=True, in_flight=True, blocking=False)
        producer.flush(5)
    recorder.write(writer)


def run_producer(stop_event, parent_pid: int, spec_json: str, bootstrap: str, run_dir: str,
                 run_id: str, writer_name: str, intent_path: str) -> None:
    """Entry point of a producer process."""
    spec = ProducerSpec.model_validate_json(spec_json)
    events = EventLog(run_dir, run_id, writer_name=f"{writer_name}-events")
    writer = HistoryWriter(run_dir, "produced", run_id, writer_name=writer_name,
                           flush_rows=20000, flush_seconds=1.0)
    leaders = ClientLeaders(spec.name, spec.topic, events)
    recorder = DeliveryRecorder(spec, leaders)
    intent = IntentLog(Path(intent_path))

    def on_error(err) -> None:
        events.emit("client", "client-error", spec.name, error=err.name(), reason=err.str(),
                    fatal=err.fatal())

    conf = producer_config(spec, bootstrap)
    conf["error_cb"] = on_error
    conf["stats_cb"] = leaders.on_stats
    try:
        if spec.transactions is not None:
            run_transactions(stop_event, parent_pid, spec, conf, intent, recorder, writer,
                             events, run_id)
        else:
            producer = Producer(conf)
            recorder.seed_leaders(producer)
            _produce_loop(stop_event, parent_pid, spec, producer, intent, recorder, writer)
            wait = 5.0 if parent_gone(parent_pid) else spec.delivery_timeout_ms / 1000 + 5
            finish_producer(producer, recorder, writer, wait)
    except BaseException as e:
        _ended_by(e, spec, events)
        raise
    finally:
        writer.close()
        events.close()
        intent.close()


def _ended_by(e: BaseException, spec: ProducerSpec, events: EventLog) -> None:
    """A producer process ending on an error: a fatal client error follows the spec's
    policy (`restart`: exit FATAL_RESTART_EXIT, and the supervisor starts the next
    incarnation); anything else, or `stop`, is a death."""
    detail = died_detail(e)
    fatal = isinstance(e, FatalClientError) or bool(detail["fatal"])
    if fatal and not isinstance(e, FatalClientError):      # not written yet
        err = e.args[0]
        events.emit("client", CLIENT_FATAL, spec.name, error=err.name(), reason=err.str(),
                    call=None, txn_seq=None, policy=spec.on_fatal)
    if fatal and spec.on_fatal == "restart":
        raise SystemExit(FATAL_RESTART_EXIT) from e
    events.emit("client", WORKLOAD_DIED, spec.name, workload="producer",
                **{**detail, "fatal": fatal or detail["fatal"]})


@dataclass(frozen=True)
class ReconcileResult:
    announced: int            # seqs in the intent log
    recorded: int             # seqs that already had a produced row
    indeterminate: int        # rows written now


def _meta_path(intent_path: Path) -> Path:
    return intent_path.with_suffix(".json")


def reconcile(run_dir: str | os.PathLike, intent_path: Path) -> ReconcileResult:
    """Write an `indeterminate` row for every announced seq without a produced row."""
    meta = json.loads(_meta_path(intent_path).read_text())
    writer_name = meta["writer_name"]
    intents = read_intents(intent_path)
    if len(intents) == 0:
        _mark(intent_path)
        return ReconcileResult(0, 0, 0)
    top = int((intents[:, 0] + intents[:, 1]).max())
    seen = np.zeros(top, dtype=bool)
    recorded = 0
    for f in sorted(table_dir(run_dir, "produced").glob(f"{writer_name}-*.parquet")):
        seqs = pq.read_table(f, columns=["seq"]).column("seq").to_numpy()
        seqs = seqs[seqs < top]
        seen[seqs] = True
    recorded = int(seen.sum())
    writer = HistoryWriter(run_dir, "produced", meta["run_id"],
                           writer_name=f"{writer_name}-reconciled-{uuid.uuid4().hex[:6]}",
                           flush_rows=50000, flush_seconds=3600)
    written = 0
    announced = np.zeros(top, dtype=bool)
    for first, count, ts, txn_seq in intents.tolist():
        announced[first:first + count] = True
        missing = np.flatnonzero(~seen[first:first + count]) + first
        if not len(missing):
            continue
        seen[missing] = True           # an intent may be announced twice (retried batch)
        seqs = missing.tolist()
        cols = {
            "seq": seqs,
            "record_id": [f"{meta['producer']}-{s}" for s in seqs],
            "send_ts_us": [ts] * len(seqs),
        }
        if meta["keys"] != "none":
            cols["key"] = [key_for(meta["keys"], meta["key_count"], s) for s in seqs]
        if meta.get("tombstone_rate") is not None:
            cols.update(compacted_columns(seqs, meta["key_count"], meta["tombstone_rate"],
                                          meta.get("seed", 0)))
        const: dict[str, Any] = {"producer": meta["producer"], "topic": meta["topic"],
                                 "status": classify.INDETERMINATE, "error": NO_REPORT}
        if txn_seq >= 0:
            const.update(txn_id=meta.get("txn_id"), txn_seq=txn_seq, txn_outcome="unknown")
        writer.append_columns(cols, **const)
        written += len(seqs)
    writer.close()
    _mark(intent_path)
    return ReconcileResult(int(announced.sum()), recorded, written)


def _mark(intent_path: Path) -> None:
    intent_path.with_suffix(".reconciled").write_text(str(now_us()))


def reconcile_run(run_dir: str | os.PathLike) -> list[ReconcileResult]:
    """Reconcile every producer of a run whose supervisor died before doing it."""
    d = Path(run_dir) / "workloads"
    return [reconcile(run_dir, p) for p in sorted(d.glob("*.intent"))
            if not p.with_suffix(".reconciled").exists()]


class ProducerProcess:
    """Parent-side handle of one producer process."""

    def __init__(self, spec: ProducerSpec, run: "RunContext"):
        self.spec = spec
        self.run_dir = run.dir
        self.run_id = run.run_id
        self.bootstrap = run.bootstrap
        self.events = run.events
        self.writer_name = f"{spec.name}-{uuid.uuid4().hex[:8]}"
        work = Path(self.run_dir) / "workloads"
        work.mkdir(parents=True, exist_ok=True)
        self.intent_path = work / f"{self.writer_name}.intent"
        self.result: ReconcileResult | None = None
        self._worker: WorkerProcess | None = None

    @property
    def txn_id(self) -> str | None:
        return txn_id_of(self.spec, self.run_id)

    def start(self) -> "ProducerProcess":
        _meta_path(self.intent_path).write_text(json.dumps({
            "producer": self.spec.name, "topic": self.spec.topic, "keys": self.spec.keys,
            "key_count": self.spec.key_count, "writer_name": self.writer_name,
            "run_id": self.run_id, "txn_id": self.txn_id,
            "tombstone_rate": self.spec.tombstone_rate, "seed": self.spec.seed}))
        self.intent_path.touch()
        spec_json = self.spec.model_dump_json()
        if self.txn_id and not self.spec.transactions.transactional_id:
            spec_json = self.spec.model_copy(update={"transactions": self.spec.transactions.model_copy(
                update={"transactional_id": self.txn_id})}).model_dump_json()
        self._worker = WorkerProcess(f"producer-{self.spec.name}", run_producer, spec_json,
                                     self.bootstrap, self.run_dir, self.run_id,
                                     self.writer_name, str(self.intent_path),
                                     log_path=self.intent_path.with_suffix(".log")).start()
        self._event("producer-start", pid=self._worker.pid)
        return self

    @property
    def pid(self) -> int | None:
        return self._worker.pid if self._worker else None

    @property
    def exitcode(self) -> int | None:
        """0 after a normal end, -9 after kill(); anything else: the process crashed."""
        return self._worker.exitcode if self._worker else None

    def is_alive(self) -> bool:
        return bool(self._worker and self._worker.is_alive())

    def wait(self, timeout: float | None = None) -> bool:
        """Wait for the producer to finish its records/duration; True if it ended."""
        assert self._worker is not None
        if self._worker.join(timeout):
            self._finish("producer-end", exitcode=self._worker.exitcode)
            return True
        return False

    def stop(self, timeout: float | None = None) -> ReconcileResult:
        """Stop sending, wait for outstanding outcomes (up to delivery.timeout.ms)."""
        assert self._worker is not None
        if timeout is None:
            timeout = self.spec.delivery_timeout_ms / 1000 + 30
        code = self._worker.stop(timeout)
        return self._finish("producer-end", exitcode=code)

    def kill(self) -> ReconcileResult:
        """SIGKILL the process (a crash); its unreported records become indeterminate."""
        assert self._worker is not None
        code = self._worker.kill()
        return self._finish("producer-crash", exitcode=code, signal="SIGKILL")

    def _finish(self, event: str, **detail: Any) -> ReconcileResult:
        if self.result is None:
            self.result = reconcile(self.run_dir, self.intent_path)
            self._event(event, announced=self.result.announced,
                        indeterminate_written=self.result.indeterminate, **detail)
            if self._worker is not None and self._worker.died \
                    and self._worker.exitcode != FATAL_RESTART_EXIT:
                # the child may have said why (its own event); this covers every exit
                self._event(WORKLOAD_DIED, workload="producer", exitcode=self._worker.exitcode,
                            source="exit code")
        return self.result

    def _event(self, name: str, **detail: Any) -> None:
        if self.events is not None:
            self.events.emit("client", name, self.spec.name, **detail)
