"""Transactional producer: transactions of N records, a seeded abort rate, and an
optional consume-transform-produce loop (send_offsets_to_transaction); Jepsen's
knobs (TransactionSpec): partitions per transaction, a delay between sends, the
reaction to an indefinite error (keep the producer, or re-initialise it).

A record's row is written when its transaction's outcome is known:
committed -> acked (offset kept), aborted -> failed (offset null), and when
commit/abort itself ends in a fatal or indefinite error -> indeterminate with
txn_outcome 'unknown'. A delivery report that comes late is written with its own
transaction's outcome. A kill mid-transaction leaves the intent entries (which
carry txn_seq) for the supervisor's reconcile: indeterminate/unknown. Every record
carries its txn_seq in the header `harness.txn_seq`, so the log itself says which
transaction sent it (kafka-dump-log, a console consumer).

A fatal client error is written as a `client-fatal` event (the call, the
transaction, the policy) and raised as FatalClientError: the producer process then
follows ProducerSpec.on_fatal (workloads/producer.py).
"""
from __future__ import annotations

import random
import time
from bisect import bisect_right
from dataclasses import dataclass, replace
from typing import Any

from confluent_kafka import Consumer, KafkaError, KafkaException, Producer, TopicPartition

from core.history import CLIENT_FATAL, EventLog, HistoryWriter, now_us
from workloads import classify
from workloads.connection import connection_only
from workloads.process import parent_gone
from workloads.records import ValueMaker, record_id_of

TXN_SEQ_HEADER = "harness.txn_seq"
# Delivery errors that are timeouts: with on_indefinite `reinit`, indefinite errors too.
TIMEOUT_ERRORS = frozenset({"_MSG_TIMED_OUT", "_TIMED_OUT", "_TIMED_OUT_QUEUE",
                            "REQUEST_TIMED_OUT"})
_STATUS = {"committed": classify.ACKED, "aborted": classify.FAILED,
           "unknown": classify.INDETERMINATE}


class FatalClientError(Exception):
    """The client said it cannot go on (already written as a `client-fatal` event)."""

    def __init__(self, error: KafkaError, call: str, txn_seq: int | None):
        super().__init__(f"{error.name()}: {error.str()} (in {call})")
        self.error, self.call, self.txn_seq = error, call, txn_seq


def indefinite(err: KafkaError) -> bool:
    """Neither fatal nor abortable, and the call may be tried again: its outcome is
    not known (a timeout, a retriable error)."""
    return not (err.fatal() or err.txn_requires_abort()) and (
        err.retriable() or err.code() in (KafkaError._TIMED_OUT, KafkaError.REQUEST_TIMED_OUT))


@dataclass
class End:
    """How a transaction ended: its outcome, the error that decided it, and (when it was
    not decided) whether that was fatal or indefinite."""
    outcome: str
    error: str | None = None
    call: str | None = None
    fatal: KafkaError | None = None
    indefinite: bool = False
    positions: list | None = None


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
    loop = _TransactionLoop(spec, conf, intent, recorder, writer, events, run_id,
                            stopping=lambda: stop_event.is_set() or parent_gone(parent_pid))
    try:
        while not (loop.stopping() or loop.workload_done()):
            n = loop.next_batch_size()
            if n is not None:
                loop.one_transaction(n)
    finally:
        loop.close()


class _TransactionLoop:
    """The transactional producer (and, with an input topic, the consuming half of
    consume-transform-produce) and the steps of one transaction."""

    def __init__(self, spec, conf: dict[str, Any], intent, recorder, writer: HistoryWriter,
                 events: EventLog, run_id: str, stopping=lambda: False):
        t = spec.transactions
        self.spec, self.txn_spec, self.stopping = spec, t, stopping
        self.intent, self.recorder, self.writer, self.events = intent, recorder, writer, events
        self.conf = dict(conf, **{"transactional.id": t.transactional_id,
                                  "transaction.timeout.ms": t.transaction_timeout_ms,
                                  # librdkafka requires delivery timeout <= transaction timeout.
                                  "delivery.timeout.ms": min(spec.delivery_timeout_ms,
                                                             t.transaction_timeout_ms)})
        self.end_timeout_s = t.end_timeout_ms / 1000
        self.seq = self.txn_seq = 0
        self.starts: list[int] = []              # each transaction's first seq, by txn_seq
        self.ends: list[End | None] = []         # and how it ended (None: still open)
        self.producer = self._make_producer()
        self.rng = random.Random(spec.seed)      # abort or commit
        self.rng_parts = random.Random(f"{spec.seed}-partitions")
        self.rng_delay = random.Random(f"{spec.seed}-delay")
        self.partitions = self._partitions() if t.partitions_per_txn else None
        self.make_value = ValueMaker(spec.name, spec.record_size, spec.keys, spec.key_count)
        self.keys = None if spec.keys == "none" else [f"k{i}".encode() for i in range(spec.key_count)]
        self.transform = None
        if t.input_topic:
            self.transform = _Transform(spec, conf["bootstrap.servers"],
                                        writer.dir.parent.parent.as_posix(), run_id,
                                        writer.writer_name, events)
        self.started = time.monotonic()

    def _make_producer(self) -> Producer:
        """A producer with the transactional.id, initialised (init_transactions fences
        an older epoch and aborts what it left open); retried while the coordinator is
        away, until the workload stops."""
        producer = Producer(self.conf)
        while True:
            try:
                producer.init_transactions(self.end_timeout_s)
                self.recorder.seed_leaders(producer)
                return producer
            except KafkaException as e:
                err = e.args[0]
                if err.fatal():
                    raise self._fatal(err, "init_transactions", None) from e
                if not err.retriable() or self.stopping():
                    raise
                time.sleep(0.5)

    def _partitions(self) -> list[int]:
        topics = self.producer.list_topics(self.spec.topic, timeout=30).topics
        return sorted(topics[self.spec.topic].partitions)

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

    def one_transaction(self, n: int) -> None:
        """Begin, send n records, end; then what the end calls for: a fatal error is
        raised, an indefinite one (or, with `reinit`, a timed-out record) re-initialises
        the producer."""
        self.throttle()
        try:
            self.begin_and_send(n)
        except KafkaException as e:
            self._abandon(e, n)
        timed_out = self.record_outcome(self.end_transaction(), n)
        end = self.ends[-1]          # with the fatal error its last flush met, if any
        if end.fatal is not None:
            raise self._fatal(end.fatal, end.call, self.txn_seq - 1)
        if self.stopping() or self.workload_done():
            return
        if end.indefinite:
            self.reinit(f"{end.call}: {end.error}")
        elif timed_out and self.txn_spec.on_indefinite == "reinit":
            self.reinit("a record of the transaction timed out")

    def throttle(self) -> None:
        if self.spec.rate is not None:       # throttle at transaction granularity
            ahead = self.seq / self.spec.rate - (time.monotonic() - self.started)
            if ahead > 0:
                time.sleep(ahead)

    def begin_and_send(self, n: int) -> None:
        self.producer.begin_transaction()
        self.intent.announce(self.seq, n, now_us(), self.txn_seq)
        self.starts.append(self.seq)
        self.ends.append(None)
        parts = self._pick_partitions()
        headers = [(TXN_SEQ_HEADER, str(self.txn_seq).encode())]
        for i, s in enumerate(range(self.seq, self.seq + n)):
            if i:
                self._pause()
            kw = {"partition": parts[i % len(parts)]} if parts else {}
            if not self._produce(s, headers, kw):
                for rest in range(s, self.seq + n):    # the transaction can only abort now
                    self.recorder.local_failure(rest, self.refused.code())
                break
        self.seq += n

    def _produce(self, s: int, headers: list, kw: dict) -> bool:
        """Hand one record to the client; False when it refused it without being fatal
        (its transaction failed meanwhile: `self.refused`)."""
        spec, producer = self.spec, self.producer
        while True:
            try:
                producer.produce(spec.topic, self.make_value(s),
                                 self.keys[s % spec.key_count] if self.keys else None,
                                 on_delivery=self.recorder.on_delivery, headers=headers, **kw)
                return True
            except BufferError:
                producer.poll(0.01)
            except KafkaException as e:
                if e.args[0].fatal():
                    raise
                self.refused = e.args[0]
                return False

    def _pick_partitions(self) -> list[int] | None:
        if self.partitions is None:
            return None
        k = min(self.txn_spec.partitions_per_txn, len(self.partitions))
        return self.rng_parts.sample(self.partitions, k)

    def _pause(self) -> None:
        """The intra-transaction delay: serve delivery reports meanwhile."""
        if self.txn_spec.intra_txn_delay_ms:
            self.producer.poll(self.rng_delay.uniform(0, self.txn_spec.intra_txn_delay_ms) / 1000)

    def _abandon(self, e: KafkaException, n: int) -> None:
        """begin_transaction or produce raised: an open transaction ends `unknown` (its
        reported records written so, the rest reconciled from the intent log by the
        supervisor); the error is raised on (a fatal one as FatalClientError)."""
        err = e.args[0]
        call, txn_seq = "begin_transaction", self.txn_seq
        if self.ends and self.ends[-1] is None:
            call = "produce"
            self.record_outcome(End("unknown", err.name(), call, indefinite=not err.fatal()), n)
            txn_seq = self.txn_seq - 1
        if err.fatal():
            raise self._fatal(err, call, txn_seq) from e
        raise e

    def call(self, fn, *args) -> KafkaError | None:
        """One commit/abort/offsets call; None when it succeeded, else its error. With
        `keep`, an indefinite error is tried again until the call answers or the
        workload stops (librdkafka: a timed-out commit may be called again)."""
        self.last_call = fn.__name__
        retried = False
        while True:
            try:
                fn(*args, self.end_timeout_s)
                return None
            except KafkaException as e:
                err = e.args[0]
                if not indefinite(err) or self.txn_spec.on_indefinite == "reinit" \
                        or self.stopping() or self.workload_done():
                    return err
                if not retried:
                    self.events.emit("client", "txn-retry", self.spec.name, call=fn.__name__,
                                     error=err.name(), reason=err.str(), txn_seq=self.txn_seq)
                    retried = True
                time.sleep(0.1)

    def end_transaction(self) -> End:
        """Commit (or abort, on purpose or because the client requires it)."""
        producer, transform = self.producer, self.transform
        # Every record reaches the log before we decide: an aborted transaction's
        # records are then really in the log (what read_uncommitted readers see),
        # not purged from the local queue.
        fatal = self.flush(self.end_timeout_s)
        if fatal is not None:
            self.last_call = "flush"
            return self._undecided(fatal, None)
        positions, err = None, None
        if transform is not None:
            positions = transform.positions()
            err = self.call(producer.send_offsets_to_transaction, positions,
                            transform.consumer.consumer_group_metadata())
        want_abort = self.rng.random() < self.txn_spec.abort_rate
        if err is None and not want_abort:
            err = self.call(producer.commit_transaction)
            if err is None:
                return End("committed", positions=positions)
        if err is not None and not err.txn_requires_abort():
            return self._undecided(err, positions)
        abort_err = self.call(producer.abort_transaction)
        if abort_err is None:
            return End("aborted", err.name() if err else "ABORTED_ON_PURPOSE", positions=positions)
        return self._undecided(abort_err, positions, first=err)

    def _undecided(self, err: KafkaError, positions, first: KafkaError | None = None) -> End:
        return End("unknown", (first or err).name(), self.last_call,
                   fatal=err if err.fatal() else None, indefinite=not err.fatal(),
                   positions=positions)

    def record_outcome(self, end: End, n: int) -> bool:
        """The transaction's rows, its input commit (consume-transform-produce) and its
        event; whether a record of it timed out."""
        fatal = self.flush(5 if end.outcome != "unknown" else 1)   # its reports are in
        if fatal is not None and end.fatal is None:
            end = replace(end, fatal=fatal, call=end.call or "flush")
        self.ends[-1] = end
        timed_out = _write_txn(self.recorder, self.writer, self.starts, self.ends,
                               self.txn_spec.transactional_id)
        if self.transform is not None and end.positions is not None:
            self.transform.record_commit(end.positions, end.outcome == "committed",
                                         None if end.outcome == "committed"
                                         else f"TXN_{end.outcome.upper()}")
            if end.outcome == "aborted":
                self.transform.rewind()
        self.events.emit("client", "transaction", self.spec.name, txn_seq=self.txn_seq,
                         outcome=end.outcome, records=n, error=end.error,
                         indefinite=end.indefinite or None, call=end.call)
        self.txn_seq += 1
        return timed_out

    def flush(self, timeout_s: float) -> KafkaError | None:
        """Serve delivery reports; a fatal error is returned, not raised (confluent-kafka
        raises it from flush once the producer is fatal), so the transaction it ended
        still gets its rows and its event, and the client-fatal event names it."""
        try:
            self.producer.flush(timeout_s)
            return None
        except KafkaException as e:
            if not e.args[0].fatal():
                raise
            return e.args[0]

    def reinit(self, why: str) -> None:
        """Close the producer and make a new one with the same transactional.id."""
        self.events.emit("client", "producer-reinit", self.spec.name, reason=why,
                         txn_seq=self.txn_seq - 1)
        old = self.producer
        old.purge()
        old.flush(1)
        try:
            old.close()
        except Exception:  # noqa: BLE001 - the old producer may be past saving
            pass
        self.producer = self._make_producer()

    def _fatal(self, err: KafkaError, call: str | None, txn_seq: int | None) -> FatalClientError:
        self.events.emit("client", CLIENT_FATAL, self.spec.name, error=err.name(),
                         reason=err.str(), call=call, txn_seq=txn_seq,
                         policy=self.spec.on_fatal)
        self.events.flush()
        return FatalClientError(err, call or "?", txn_seq)

    def close(self) -> None:
        """Close the consuming half of consume-transform-produce, if any."""
        if self.transform is not None:
            self.transform.close()


def _write_txn(recorder, writer: HistoryWriter, starts: list[int], ends: list,
               txn_id: str) -> bool:
    """Every delivery report taken so far, as rows of its own transaction (found by its
    seq): a late report is written with the outcome of the transaction it was sent in.
    Returns whether one of them timed out."""
    cols = recorder.complete(recorder.take())
    n = len(cols["seq"])
    if not n:
        return False
    timed_out = any(e in TIMEOUT_ERRORS for e in cols["error"] if e)
    txn = [bisect_right(starts, s) - 1 for s in cols["seq"]]
    end = [ends[t] or End("unknown") for t in txn]
    status = [_STATUS[e.outcome] for e in end]
    kept = [st == classify.ACKED for st in status]
    cols["offset"] = [o if k else None for o, k in zip(cols["offset"], kept, strict=True)]
    cols["acked_by"] = [b if k else None for b, k in zip(cols["acked_by"], kept, strict=True)]
    cols["error"] = [er or (None if k else e.error) for er, k, e in zip(cols["error"], kept, end,
                                                                        strict=True)]
    cols.update(status=status, txn_seq=txn, txn_outcome=[e.outcome for e in end])
    writer.append_columns(cols, **recorder.row_constants(), txn_id=txn_id)
    return timed_out
