"""A pipeline processor on librdkafka (issue 36): read, count per key, write one output
per input, commit the input offsets, in a process of its own.

It is a member of the pipeline's consumer group (read_committed, eager assignment)
and writes, per input record, one output to the output topic: the same key, the same
partition number as the input's (the output topic is co-partitioned with the input, as
Kafka Streams' changelogs are), and a value (workloads/records.py pipeline_value)
that carries the input's record_id and, keyed, the count of inputs seen for that key.

exactly_once: a transactional producer (transactional.id `<run_id>-<pipeline>-<slot>`:
a restarted instance of a slot fences the one before it); each transaction holds up to
`records_per_txn` inputs or `commit_interval_ms` of them, and commits their input
offsets with send_offsets_to_transaction (KIP-447: the group's metadata fences an
instance that lost its partitions). Outputs are flushed before the offsets are sent,
so a transaction's outputs are in the log before its offsets can be.
at_least_once: an idempotent producer; the outputs are flushed, then the offsets are
committed (a kill between the two re-reads the inputs: duplicates, never loss).

The per-key state, and why it survives a rebalance or a restart: the count lives in
the outputs themselves. On every assignment the processor rebuilds the counts of its
new partitions by reading those output partitions (a changelog) from the beginning to
their high watermark, read_committed under exactly_once. Reading up to the high
watermark (not the last stable offset) waits until every transaction open on the
partition then is decided: a killed owner's open transaction is aborted (its
transaction times out, or its slot's restart fences it) before the new owner counts,
and since a transaction's outputs reach the log before its offsets are sent, the
outputs a committed offset stands for are all below that watermark. So the counts
rebuilt are those of exactly the inputs below the committed offsets. After an abort,
the counts go back to those at the transaction's start and the consumer seeks back to
the committed offsets. State is kept per (partition, key).

What it did goes to the history: its deliveries (`consumed`, phase run, its group),
its commits (`commits`), and `client` events (target the instance, detail the
pipeline): pipeline-rebalance, pipeline-restore (what was rebuilt, how long it took),
pipeline-txn-aborted, pipeline-fenced / pipeline-rebuild, pipeline-stats (transactions
begun, committed, aborted; every few seconds and at the end), and workload-died.

Errors, as librdkafka documents them: a retriable one is called again (its
transactional calls resume where they stopped); an abortable one aborts the
transaction; a fatal one ends the producer for good, so both clients are closed and
made again (`_rebuild`, as the Java processor does) and the error is recorded as
pipeline-fenced or pipeline-rebuild: a coordinator's failover ended this processor with
INVALID_TXN_STATE and _FENCED before it did (benchmarks/evidence/
pipeline-librdkafka-invalid-txn-state-after-coordinator-kill). send_offsets_to_transaction
is given 10 s past its own timeout (`returned_within`): librdkafka can block there while
the group coordinator is down (#5456), and a processor blocked in it holds its
partitions (its consumer still heartbeats) with the whole group waiting on it; past that
it counts as fatal and the clients are rebuilt.
"""
from __future__ import annotations

import json
import os
import threading
import time
import uuid
from dataclasses import asdict, dataclass, field
from typing import Any

from confluent_kafka import Consumer, KafkaError, KafkaException, Producer, TopicPartition

from core.history import EventLog, HistoryWriter, now_us
from workloads.connection import connection_only
from workloads.process import StopCheck, run_worker
from workloads.records import pipeline_fields_of, pipeline_value, record_id_of

EXACTLY_ONCE, AT_LEAST_ONCE = "exactly_once", "at_least_once"
STATS_EVERY_S = 5.0
# fatal errors that mean another producer epoch took the transactional.id: a newer
# instance of the slot, or the coordinator's own timeout of an open transaction
FENCING_ERRORS = frozenset({KafkaError._FENCED, KafkaError.PRODUCER_FENCED,
                            KafkaError.INVALID_PRODUCER_EPOCH})
# librdkafka's send_offsets_to_transaction can block past its own timeout while the
# group coordinator is down (librdkafka #5456, open; seen in this harness under a
# coordinator kill): a call not back this long after its timeout is taken as a producer
# that will not come back (a fatal error: the clients are rebuilt)
CALL_GRACE_S = 10.0
MAX_REBUILDS = 10               # per process: past that, the error is not one a rebuild ends
# a watermark query fails with these while a partition's leader is unknown or down (a
# broker killed, a quorum lost): its metadata is refreshed and the query asked again.
# _DESTROY_BROKER: the query was in flight to a broker whose handle librdkafka dropped
# (a killed leader; it ended a 3.9.2 processor's restore, RESULTS 2026-11-28)
WATERMARK_RETRIABLE = frozenset({KafkaError._UNKNOWN_PARTITION, KafkaError._TIMED_OUT,
                                 KafkaError._TRANSPORT, KafkaError._DESTROY_BROKER,
                                 KafkaError.LEADER_NOT_AVAILABLE,
                                 KafkaError.NOT_LEADER_FOR_PARTITION,
                                 KafkaError.UNKNOWN_TOPIC_OR_PART})


@dataclass(frozen=True)
class ProcessorSettings:
    """What one processor instance does: plain data, handed to its process as JSON."""
    pipeline: str
    group_id: str
    input_topic: str
    output_topic: str
    processing: str = EXACTLY_ONCE
    keyed: bool = True
    transactional_id: str = ""
    records_per_txn: int = 100
    commit_interval_ms: int = 100
    transaction_timeout_ms: int = 10000
    session_timeout_ms: int = 10000
    output_size: int = 100
    restore_timeout_s: float = 60.0
    client_config: dict[str, Any] = field(default_factory=dict)


def settings_json(s: ProcessorSettings) -> str:
    return json.dumps(asdict(s))


def _settings(text: str) -> ProcessorSettings:
    return ProcessorSettings(**json.loads(text))


class _Processor:
    def __init__(self, s: ProcessorSettings, instance: str, bootstrap: str, run_dir: str,
                 run_id: str):
        self.s, self.instance, self.bootstrap = s, instance, bootstrap
        self.eos = s.processing == EXACTLY_ONCE
        wn = f"{s.pipeline}-{instance}-{uuid.uuid4().hex[:6]}"
        self.consumed = HistoryWriter(run_dir, "consumed", run_id, writer_name=wn,
                                      flush_rows=20000, flush_seconds=1.0)
        self.commits = HistoryWriter(run_dir, "commits", run_id, writer_name=wn, flush_seconds=1.0)
        self.events = EventLog(run_dir, run_id, writer_name=f"{wn}-events")
        self.state: dict[tuple[int, str], int] = {}        # (partition, key) -> count
        self.committed_state: dict[tuple[int, str], int] = {}
        self.in_txn, self.txn_records, self.txn_started = False, 0, 0.0
        self.txn_seq = 0
        self.poll_seq, self.assignment = 0, 0
        self.stats = {"begun": 0, "committed": 0, "aborted": 0, "outputs": 0, "restores": 0,
                      "rebuilds": 0}
        self.dirty = False                                  # at_least_once: outputs not committed
        self.rebuilds = 0
        self.producer = self._producer()
        self.consumer = self._consumer()

    def event(self, name: str, **detail: Any) -> None:
        self.events.emit("client", name, self.instance, pipeline=self.s.pipeline,
                         group_id=self.s.group_id, **detail)

    def _producer(self) -> Producer:
        conf = {"bootstrap.servers": self.bootstrap, "client.id": self.instance,
                "enable.idempotence": True, "acks": "all", "linger.ms": 5,
                **self.s.client_config}
        if not self.eos:
            return Producer(conf)
        conf.update({"transactional.id": self.s.transactional_id,
                     "transaction.timeout.ms": self.s.transaction_timeout_ms,
                     "delivery.timeout.ms": min(int(conf.get("delivery.timeout.ms", 120000)),
                                                self.s.transaction_timeout_ms)})
        producer = Producer(conf)
        call_again_if_retriable(lambda: producer.init_transactions(30), self.s.restore_timeout_s)
        return producer

    def _consumer(self) -> Consumer:
        s = self.s
        consumer = Consumer({
            "bootstrap.servers": self.bootstrap, "group.id": s.group_id,
            "client.id": self.instance, "enable.auto.commit": False,
            "isolation.level": "read_committed", "auto.offset.reset": "earliest",
            "partition.assignment.strategy": "range", "session.timeout.ms": s.session_timeout_ms,
            **connection_only(s.client_config)})
        consumer.subscribe([s.input_topic], on_assign=self._on_assign,
                           on_revoke=self._on_revoke, on_lost=self._on_lost)
        return consumer

    def _rebuild(self, err: KafkaError, during: str) -> None:
        """After a fatal error: librdkafka's producer cannot be used again ("decommission
        the transactional producer if the flag is set", librdkafka 1.6.1), so, as the
        Java processor does, both clients are closed and made again and every count is
        forgotten; the new consumer's assignment rebuilds the counts from the output
        topic, and the new producer's init_transactions (same transactional.id) has the
        coordinator decide the transaction the old one left open before that. The error
        stays in the history (`pipeline-fenced` for a fencing error, else
        `pipeline-rebuild`) and in the stats (`rebuilds`)."""
        self.event(rebuild_event_of(err), error=err.name(), reason=f"{during}: {err.str()}"[:300],
                   txn=self.txn_seq)
        self.events.flush()
        self.rebuilds += 1
        self.stats["rebuilds"] = self.rebuilds
        if self.rebuilds > MAX_REBUILDS:        # an error no new producer gets past
            raise KafkaException(err)
        self.in_txn = self.dirty = False        # the coordinator decides it, not this client
        self.txn_seq += 1
        _drop(self.producer)
        self.producer = None                    # destroyed before the new one takes its id
        try:
            self.consumer.close()               # leaves the group: the partitions move
        except (KafkaException, RuntimeError):
            pass                                # gone all the same: its session times out
        self.state, self.committed_state = {}, {}
        self.assignment += 1
        self.producer = self._producer()
        self.consumer = self._consumer()

    # -- rebalances --------------------------------------------------------------
    def _on_assign(self, consumer, parts) -> None:
        self.assignment += 1
        self.event("pipeline-rebalance", type="assigned", partitions=[p.partition for p in parts])
        self._restore([p.partition for p in parts])

    def _on_revoke(self, consumer, parts) -> None:
        self.assignment += 1
        self.event("pipeline-rebalance", type="revoked", partitions=[p.partition for p in parts])
        self.finish("revoke")
        self._forget({p.partition for p in parts})

    def _on_lost(self, consumer, parts) -> None:
        self.assignment += 1
        self.event("pipeline-rebalance", type="lost", partitions=[p.partition for p in parts])
        if self.in_txn:
            self._abort("lost", seek=False)         # not ours any more: nothing to go back to
        self._forget({p.partition for p in parts})

    def _forget(self, partitions: set[int]) -> None:
        for d in (self.state, self.committed_state):
            for k in [k for k in d if k[0] in partitions]:
                del d[k]

    def _restore(self, partitions: list[int]) -> None:
        """The counts of these partitions' keys, from the output partitions (the module
        docstring says why this is exact)."""
        started = time.monotonic()
        conf = {"bootstrap.servers": self.bootstrap, "enable.auto.commit": False,
                "group.id": f"restore-{uuid.uuid4().hex[:8]}", "enable.partition.eof": True,
                **connection_only(self.s.client_config)}
        # the high watermark, not the last stable offset a read_committed client is told
        ends = _high_watermarks(Consumer({**conf, "isolation.level": "read_uncommitted"}),
                                self.s.output_topic, partitions, self.s.restore_timeout_s)
        reader = Consumer({**conf, "isolation.level": "read_committed" if self.eos
                           else "read_uncommitted"})
        try:
            counts, outputs = _read_changelog(reader, self.s.output_topic, ends,
                                              started + self.s.restore_timeout_s)
        finally:
            reader.close()
        self._forget(set(partitions))
        self.state.update(counts)
        self.committed_state.update(counts)
        self.stats["restores"] += 1
        self.event("pipeline-restore", partitions=partitions, keys=len(counts), outputs=outputs,
                   seconds=round(time.monotonic() - started, 3))
        self.events.flush()

    # -- the loop ----------------------------------------------------------------
    def run(self, stop_event, parent_pid: int) -> None:
        self.event("pipeline-start", pid=os.getpid(), processing=self.s.processing)
        stopping, last_stats = StopCheck(stop_event, parent_pid), time.monotonic()
        while not stopping():
            try:
                msgs = self._step()
            except KafkaException as e:
                if not e.args[0].fatal():
                    raise
                self._rebuild(e.args[0], "step")
                msgs = []
            if not msgs:
                self.consumed.maybe_flush()
                self.commits.maybe_flush()
                self.events.maybe_flush()
            if time.monotonic() - last_stats >= STATS_EVERY_S:
                last_stats = time.monotonic()
                self.event("pipeline-stats", **self.stats)

    def _step(self) -> list:
        msgs = [m for m in self.consumer.consume(self.s.records_per_txn, 0.1)
                if m.error() is None]
        if msgs:
            self._process(msgs)
        if self._due():
            self.finish("interval")
        return msgs

    def _due(self) -> bool:
        if not (self.in_txn or self.dirty):
            return False
        return (self.txn_records >= self.s.records_per_txn
                or time.monotonic() - self.txn_started >= self.s.commit_interval_ms / 1000)

    def _process(self, msgs: list) -> None:
        if not (self.in_txn or self.dirty):
            self.txn_started, self.txn_records = time.monotonic(), 0
            if self.eos:
                self.producer.begin_transaction()
                self.in_txn = True
                self.stats["begun"] += 1
            else:
                self.dirty = True
        recv = now_us()
        rows = []
        for m in msgs:
            k = m.key()
            key = k.decode(errors="replace") if k is not None else None
            rid = record_id_of(m.value())
            count = None
            if self.s.keyed and key is not None:
                count = self.state.get((m.partition(), key), 0) + 1
                self.state[(m.partition(), key)] = count
            self._produce(m, rid or f"?{m.partition()}-{m.offset()}", count)
            rows.append({"consumer": self.instance, "group_id": self.s.group_id, "phase": "run",
                         "topic": m.topic(), "partition": m.partition(), "offset": m.offset(),
                         "key": key, "record_id": rid, "isolation": "read_committed",
                         "recv_ts_us": recv, "poll_seq": self.poll_seq + len(rows),
                         "leader_epoch": m.leader_epoch(), "assignment": self.assignment})
        self.poll_seq += len(rows)
        self.consumed.extend(rows)
        self.txn_records += len(msgs)

    def _produce(self, m, rid: str, count: int | None) -> None:
        value = pipeline_value(rid, count, self.instance, self.txn_seq, self.s.output_size)
        while True:
            try:
                self.producer.produce(self.s.output_topic, value, m.key(), partition=m.partition())
                self.stats["outputs"] += 1
                return
            except BufferError:
                self.producer.poll(0.01)

    def finish(self, why: str) -> None:
        """End the open transaction (exactly_once: commit it with its input offsets) or
        commit what was produced (at_least_once)."""
        if not (self.in_txn or self.dirty):
            return
        positions = [tp for tp in self.consumer.position(self.consumer.assignment())
                     if tp.offset >= 0]
        self.consumed.flush()               # what was received is on disk before it commits
        if self.eos:
            self._commit_txn(positions, why)
        else:
            self._commit_after(positions)

    def _commit_txn(self, positions: list[TopicPartition], why: str) -> None:
        try:
            self.producer.flush(30)             # outputs in the log before the offsets
            metadata = self.consumer.consumer_group_metadata()
            returned_within(lambda: self.producer.send_offsets_to_transaction(
                positions, metadata, 30), 30 + CALL_GRACE_S, "send_offsets_to_transaction")
            self.producer.commit_transaction(30)
        except KafkaException as e:
            err = e.args[0]
            self._record_commit(positions, False, err.name())
            if err.fatal():
                raise                           # the loop rebuilds both clients
            self._abort(f"{why}: {err.name()}")
            return
        self._record_commit(positions, True, None)
        self.committed_state = dict(self.state)
        self.in_txn = False
        self.stats["committed"] += 1
        self.txn_seq += 1

    def _abort(self, why: str, seek: bool = True) -> None:
        """Abort the open transaction, go back to the counts at its start and to the
        committed input offsets."""
        # librdkafka's word on a retriable abort error (a timeout while the coordinator
        # moves): "retry call to resume"; dying here lost a run's inputs. A fatal one is
        # raised to the loop, which rebuilds both clients.
        call_again_if_retriable(lambda: self.producer.abort_transaction(30),
                                self.s.restore_timeout_s)
        self.in_txn = False
        self.stats["aborted"] += 1
        self.event("pipeline-txn-aborted", txn=self.txn_seq, why=why)
        self.txn_seq += 1
        self.state = dict(self.committed_state)
        self.assignment += 1            # re-reading from the commit is a generation of its own
        assigned = self.consumer.assignment() if seek else []
        if assigned:
            for tp in self.consumer.committed(assigned, timeout=30):
                tp.offset = tp.offset if tp.offset >= 0 else -2     # -2: the beginning
                self.consumer.seek(tp)

    def _commit_after(self, positions: list[TopicPartition]) -> None:
        left = self.producer.flush(30)
        if left:
            raise KafkaException(KafkaError(KafkaError._TIMED_OUT,
                                            f"{left} outputs undelivered after 30 s"))
        if positions:
            try:
                result = self.consumer.commit(offsets=positions, asynchronous=False)
                self._record_commit([tp for tp in result if tp.error is None], True, None)
            except KafkaException as e:
                self._record_commit(positions, False, e.args[0].name())
        self.dirty = False
        self.txn_seq += 1

    def _record_commit(self, positions, ok: bool, error: str | None) -> None:
        ts = now_us()
        self.commits.extend({"consumer": self.instance, "group_id": self.s.group_id,
                             "topic": tp.topic, "partition": tp.partition, "offset": tp.offset,
                             "ok": ok, "error": error, "ts_us": ts} for tp in positions)
        self.commits.flush()

    def close(self) -> None:
        try:
            try:
                self.finish("close")
            except Exception as e:  # noqa: BLE001 - the close goes on: the group must be left
                self.event("pipeline-close-error", error=f"{type(e).__name__}: {e}"[:300])
            self.consumer.close()
            self.event("pipeline-closed", **self.stats)
        finally:
            self.event("pipeline-stats", **self.stats)
            self.consumed.close()
            self.commits.close()
            self.events.close()


def call_again_if_retriable(call, within_s: float, pause_s: float = 0.5,
                            also: frozenset[int] = frozenset(), before_again=None):
    """`call()`, called again while it fails with an error librdkafka marks retriable and
    not fatal (its transactional calls resume where they stopped), or whose code is in
    `also` (errors a call reports without the retriable mark), for at most `within_s`;
    `before_again()` (a metadata refresh) runs before each new call."""
    deadline = time.monotonic() + within_s
    while True:
        try:
            return call()
        except KafkaException as e:
            err = e.args[0]
            again = not err.fatal() and (err.retriable() or err.code() in also)
            if not again or time.monotonic() > deadline:
                raise
            time.sleep(pause_s)
            if before_again is not None:
                before_again()


def returned_within(call, within_s: float, what: str):
    """`call()`'s result or error, if it returns within `within_s`; else a fatal
    _TIMED_OUT of ours (its text says so), the call left running in a daemon thread on a
    producer the caller gives up (a new producer with the same transactional.id fences
    it)."""
    done = threading.Event()
    outcome: dict[str, Any] = {}

    def target() -> None:
        try:
            outcome["result"] = call()
        except BaseException as e:      # noqa: BLE001 - handed to the caller's thread
            outcome["error"] = e
        finally:
            done.set()
    threading.Thread(target=target, name=what, daemon=True).start()
    if not done.wait(within_s):
        raise KafkaException(KafkaError(
            KafkaError._TIMED_OUT, f"{what} had not returned after {within_s:.0f} s, past its "
            f"own timeout (librdkafka #5456): the harness gives this producer up", fatal=True))
    if "error" in outcome:
        raise outcome["error"]
    return outcome.get("result")


def rebuild_event_of(err: KafkaError) -> str:
    """The event a fatal error's rebuild is recorded as: `pipeline-fenced` when another
    producer epoch took the transactional.id, else `pipeline-rebuild` (as the Java
    processor names them)."""
    return "pipeline-fenced" if err.code() in FENCING_ERRORS else "pipeline-rebuild"


def _drop(producer: Producer) -> None:
    """Let go of a producer a fatal error ended: what it still holds is purged, not
    sent (close() would try to abort and flush through a producer that cannot)."""
    try:
        producer.purge()
        producer.flush(5)
    except KafkaException:
        pass


def _high_watermarks(c: Consumer, topic: str, partitions: list[int], within_s: float
                     ) -> dict[int, int]:
    """partition -> its high watermark, for the partitions that hold anything. A query
    that fails while the partition's leader is unknown or down is asked again, its
    metadata refreshed, within `within_s` (the restore's time)."""
    def refresh() -> None:
        try:
            c.list_topics(topic, timeout=5)
        except KafkaException:
            pass                        # the next query says whether it helped
    try:
        ends = {}
        for p in partitions:
            low, high = call_again_if_retriable(
                lambda p=p: c.get_watermark_offsets(TopicPartition(topic, p), timeout=10,
                                                    cached=False),
                within_s, also=WATERMARK_RETRIABLE, before_again=refresh)
            if high > low:
                ends[p] = high
        return ends
    finally:
        c.close()


def _read_changelog(reader: Consumer, topic: str, ends: dict[int, int], deadline: float
                    ) -> tuple[dict[tuple[int, str], int], int]:
    """(partition, key) -> the last count written for it, reading each output partition
    from the beginning to `ends` (its high watermark when the assignment came); and how
    many outputs were read. read_committed, a transaction still open below the end holds
    the read until it is decided."""
    counts: dict[tuple[int, str], int] = {}
    outputs = 0
    if not ends:
        return counts, 0
    reader.assign([TopicPartition(topic, p, -2) for p in ends])
    position = dict.fromkeys(ends, 0)
    while any(position[p] < ends[p] for p in ends):
        if time.monotonic() > deadline:
            raise TimeoutError(f"restoring {topic} partitions {sorted(ends)}: at {position}, "
                               f"the high watermarks {ends} not reached")
        for m in reader.consume(1000, 0.5):
            p = m.partition()
            if m.error() is not None:
                if m.error().code() == KafkaError._PARTITION_EOF:
                    position[p] = max(position[p], m.offset())
                continue
            position[p] = max(position[p], m.offset() + 1)
            if m.offset() >= ends[p]:
                continue
            _, count = pipeline_fields_of(m.value())
            outputs += 1
            if count is not None and m.key() is not None:
                counts[(p, m.key().decode(errors="replace"))] = count
    return counts, outputs


def run_processor(stop_event, parent_pid: int, settings: str, instance: str, bootstrap: str,
                  run_dir: str, run_id: str) -> None:
    """Entry point of a processor process (workloads/process.py WorkerProcess)."""
    p = _Processor(_settings(settings), instance, bootstrap, run_dir, run_id)
    run_worker(p, stop_event, parent_pid, "pipeline-processor", p.event)
