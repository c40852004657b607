"""Transactional producer: transactions of N records, a seeded abort rate, and an
optional consume-transform-produce loop (send_offsets_to_transaction).

A record's row is written when its transaction's outcome is known:
committed -> acked (offset kept), aborted -> failed (offset null), and when
commit/abort itself ends in a fatal or timed-out error -> indeterminate with
txn_outcome 'unknown'. A kill mid-transaction leaves the intent entries
(which carry txn_seq) for the supervisor's reconcile: indeterminate/unknown.
"""
from __future__ import annotations

import random
import time
from typing import Any

from confluent_kafka import Consumer, KafkaException, Producer, TopicPartition

from core.history import EventLog, HistoryWriter, now_us
from workloads import classify
from workloads.connection import connection_only
from workloads.process import parent_gone
from workloads.records import ValueMaker, record_id_of

TXN_CALL_TIMEOUT_S = 30.0


def _txn_call(fn, *args) -> tuple[bool, str | None, bool]:
    """Run commit/abort/send_offsets retrying retriable errors.

    Returns (ok, error_name, requires_abort). A fatal error or running out of
    retries returns ok=False, requires_abort=False: the outcome is unknown.
    """
    deadline = time.monotonic() + TXN_CALL_TIMEOUT_S * 2
    while True:
        try:
            fn(*args)
            return True, None, False
        except KafkaException as e:
            err = e.args[0]
            if err.txn_requires_abort():
                return False, err.name(), True
            if err.retriable() and time.monotonic() < deadline:
                time.sleep(0.1)
                continue
            return False, err.name(), False


class _Transform:
    """The consuming half of consume-transform-produce."""

    def __init__(self, spec, bootstrap: str, run_dir: str, run_id: str, writer_name: str,
                 events: EventLog):
        t = spec.transactions
        self.name, self.group = spec.name, t.input_group
        self.consumer = Consumer({
            "bootstrap.servers": bootstrap, "group.id": t.input_group,
            "enable.auto.commit": False, "isolation.level": "read_committed",
            "auto.offset.reset": "earliest", "enable.partition.eof": False,
            **connection_only(spec.client_config),
        })
        self.consumed = HistoryWriter(run_dir, "consumed", run_id,
                                      writer_name=f"{writer_name}-consumed", flush_seconds=1.0)
        # consumed.poll_seq / .assignment (the spec). rewind() seeks back after an abort:
        # it starts a generation too, since re-reading from there is not going back.
        self.poll_seq, self.assignment = 0, 0
        self.commits = HistoryWriter(run_dir, "commits", run_id,
                                     writer_name=f"{writer_name}-commits", flush_seconds=1.0)

        def on_assign(c, parts):
            self.assignment += 1
            events.emit("client", "rebalance", self.name, type="assigned", group_id=self.group,
                        partitions=[[p.topic, p.partition] for p in parts])

        def on_revoke(c, parts):
            self.assignment += 1
            events.emit("client", "rebalance", self.name, type="revoked", group_id=self.group,
                        partitions=[[p.topic, p.partition] for p in parts])

        self.consumer.subscribe([t.input_topic], on_assign=on_assign, on_revoke=on_revoke)

    def take(self, n: int) -> list:
        msgs = [m for m in self.consumer.consume(n, 1.0) if m.error() is None]
        now = now_us()
        self.consumed.extend({
            "consumer": self.name, "group_id": self.group, "phase": "run", "topic": m.topic(),
            "partition": m.partition(), "offset": m.offset(),
            "key": m.key().decode() if m.key() else None, "record_id": record_id_of(m.value()),
            "isolation": "read_committed", "recv_ts_us": now, "leader_epoch": m.leader_epoch(),
            "poll_seq": self.poll_seq + i, "assignment": self.assignment}
            for i, m in enumerate(msgs))
        self.poll_seq += len(msgs)
        return msgs

    def positions(self) -> list[TopicPartition]:
        return [tp for tp in self.consumer.position(self.consumer.assignment()) if tp.offset >= 0]

    def record_commit(self, positions: list[TopicPartition], ok: bool, error: str | None) -> None:
        ts = now_us()
        self.commits.extend({"consumer": self.name, "group_id": self.group, "topic": tp.topic,
                             "partition": tp.partition, "offset": tp.offset, "ok": ok,
                             "error": error, "ts_us": ts} for tp in positions)

    def rewind(self) -> None:
        """After an abort, go back to the last committed input offsets."""
        assignment = self.consumer.assignment()
        self.assignment += 1
        for tp in self.consumer.committed(assignment, timeout=10):
            if tp.offset < 0:
                tp.offset = -2          # OFFSET_BEGINNING: nothing committed yet
            self.consumer.seek(tp)

    def maybe_flush(self) -> None:
        self.consumed.maybe_flush()
        self.commits.maybe_flush()

    def close(self) -> None:
        try:
            self.consumer.close()
        finally:
            self.consumed.close()
            self.commits.close()


def run_transactions(stop_event, parent_pid: int, spec, conf: dict[str, Any], intent,
                     recorder, writer: HistoryWriter, events: EventLog, run_id: str) -> None:
    loop = _TransactionLoop(spec, conf, intent, recorder, writer, events, run_id)
    try:
        while not (stop_event.is_set() or parent_gone(parent_pid)):
            if loop.workload_done():
                break
            n = loop.next_batch_size()
            if n is None:
                continue
            loop.throttle()
            loop.begin_and_send(n)
            outcome, error, positions = loop.commit_or_abort()
            loop.record_outcome(outcome, error, positions, n)
            if outcome == "unknown":
                # The producer is unusable after a fatal error; end, the history says why.
                events.emit("client", "producer-fatal", spec.name, error=error,
                            txn_seq=loop.txn_seq - 1)
                break
    finally:
        loop.close()


class _TransactionLoop:
    """The transactional producer (and, with an input topic, the consuming half of
    consume-transform-produce) and the steps of one transaction."""

    def __init__(self, spec, conf: dict[str, Any], intent, recorder, writer: HistoryWriter,
                 events: EventLog, run_id: str):
        t = spec.transactions
        self.spec, self.txn_spec = spec, t
        self.intent, self.recorder, self.writer, self.events = intent, recorder, writer, events
        conf = dict(conf, **{"transactional.id": t.transactional_id,
                             "transaction.timeout.ms": t.transaction_timeout_ms,
                             # librdkafka requires delivery timeout <= transaction timeout.
                             "delivery.timeout.ms": min(spec.delivery_timeout_ms,
                                                        t.transaction_timeout_ms)})
        self.producer = Producer(conf)
        self.producer.init_transactions(TXN_CALL_TIMEOUT_S)
        self.rng = random.Random(spec.seed)
        self.make_value = ValueMaker(spec.name, spec.record_size, spec.keys, spec.key_count)
        self.keys = None if spec.keys == "none" else [f"k{i}".encode() for i in range(spec.key_count)]
        self.transform = None
        if t.input_topic:
            self.transform = _Transform(spec, conf["bootstrap.servers"],
                                        writer.dir.parent.parent.as_posix(), run_id,
                                        writer.writer_name, events)
        self.started = time.monotonic()
        self.seq = self.txn_seq = 0

    def workload_done(self) -> bool:
        spec = self.spec
        if spec.records is not None and self.seq >= spec.records:
            return True
        return spec.duration_s is not None and time.monotonic() - self.started >= spec.duration_s

    def next_batch_size(self) -> int | None:
        """The next transaction's record count; None when there is no input to transform yet."""
        n = self.txn_spec.records_per_txn
        if self.spec.records is not None:
            n = min(n, self.spec.records - self.seq)
        if self.transform is None:
            return n
        inputs = self.transform.take(n)
        if not inputs:               # idle: still get buffered rows to disk
            self.writer.maybe_flush()
            self.transform.maybe_flush()
            self.events.maybe_flush()
            return None
        return len(inputs)

    def throttle(self) -> None:
        if self.spec.rate is not None:       # throttle at transaction granularity
            ahead = self.seq / self.spec.rate - (time.monotonic() - self.started)
            if ahead > 0:
                time.sleep(ahead)

    def begin_and_send(self, n: int) -> None:
        spec, producer = self.spec, self.producer
        producer.begin_transaction()
        self.intent.announce(self.seq, n, now_us(), self.txn_seq)
        for s in range(self.seq, self.seq + n):
            while True:
                try:
                    producer.produce(spec.topic, self.make_value(s),
                                     self.keys[s % spec.key_count] if self.keys else None,
                                     on_delivery=self.recorder.on_delivery)
                    break
                except BufferError:
                    producer.poll(0.01)
        self.seq += n

    def commit_or_abort(self) -> tuple[str, str | None, list[TopicPartition] | None]:
        """End the open transaction: (outcome, error, input positions sent with it)."""
        producer, transform = self.producer, self.transform
        # Every record reaches the log before we decide: an aborted transaction's
        # records are then really in the log (what read_uncommitted readers see),
        # not purged from the local queue.
        producer.flush(TXN_CALL_TIMEOUT_S)
        positions = None
        ok, error, requires_abort = True, None, False
        if transform is not None:
            positions = transform.positions()
            ok, error, requires_abort = _txn_call(
                producer.send_offsets_to_transaction, positions,
                transform.consumer.consumer_group_metadata(), TXN_CALL_TIMEOUT_S)
        want_abort = self.rng.random() < self.txn_spec.abort_rate
        if ok and not want_abort:
            ok, error, requires_abort = _txn_call(producer.commit_transaction, TXN_CALL_TIMEOUT_S)
            outcome = "committed" if ok else None
        else:
            outcome = None
            requires_abort = requires_abort or ok   # ok here means: abort on purpose
        if outcome is None and (requires_abort or want_abort):
            aborted, abort_error, _ = _txn_call(producer.abort_transaction, TXN_CALL_TIMEOUT_S)
            outcome = "aborted" if aborted else "unknown"
            error = error or ("ABORTED_ON_PURPOSE" if want_abort else None) or abort_error
        elif outcome is None:
            outcome = "unknown"
        return outcome, error, positions

    def record_outcome(self, outcome: str, error: str | None,
                       positions: list[TopicPartition] | None, n: int) -> None:
        """The transaction's rows, its input commit (consume-transform-produce) and its event."""
        self.producer.flush(5)                # reports of this txn are all in after commit/abort
        _write_txn(self.recorder, self.writer, outcome, error, self.txn_spec.transactional_id,
                   self.txn_seq)
        if self.transform is not None:
            self.transform.record_commit(positions, outcome == "committed",
                                         None if outcome == "committed" else f"TXN_{outcome.upper()}")
            if outcome == "aborted":
                self.transform.rewind()
        self.events.emit("client", "transaction", self.spec.name, txn_seq=self.txn_seq,
                         outcome=outcome, records=n, error=error)
        self.txn_seq += 1

    def close(self) -> None:
        """Close the consuming half of consume-transform-produce, if any."""
        if self.transform is not None:
            self.transform.close()


def _write_txn(recorder, writer: HistoryWriter, outcome: str, error: str | None,
               txn_id: str, txn_seq: int) -> None:
    cols = recorder.complete(recorder.take())
    n = len(cols["seq"])
    if not n:
        return
    if outcome == "committed":
        status = classify.ACKED
    elif outcome == "aborted":
        status = classify.FAILED
    else:
        status = classify.INDETERMINATE
    if status != classify.ACKED:
        cols["offset"] = cols["acked_by"] = [None] * n
        cols["error"] = [e or error for e in cols["error"]]
    cols["status"] = [status] * n
    writer.append_columns(cols, **recorder.row_constants(), txn_id=txn_id, txn_seq=txn_seq,
                          txn_outcome=outcome)
