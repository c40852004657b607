"""A consumer group of M member processes that records every delivery, commit and rebalance.

Commit modes, and what a SIGKILL does to each (this is the difference the
reconciler measures):
- `auto`: enable.auto.commit with the default offset store, so librdkafka
  commits what consume() *returned*, whether or not our row reached disk. A
  member killed between a commit and its next history flush leaves offsets
  committed that no row says were received -> `skipped`.
- `after-processing`: a member flushes its `consumed` rows to disk *before*
  committing their offsets (and on revoke), so a kill can only lose offsets
  not yet committed -> the next owner re-reads them -> `redelivered`.
Commit rows come from the on_commit callback (auto) or from the synchronous
commit's per-partition result (after-processing); one source per mode, so no
commit is recorded twice.
"""
from __future__ import annotations

import os
import threading
import time
import uuid
from pathlib import Path
from typing import TYPE_CHECKING, Any

from confluent_kafka import Consumer, KafkaError, KafkaException, TopicPartition

from core.history import WORKLOAD_DIED, EventLog, HistoryWriter, now_us
from workloads.churn import Churn
from workloads.connection import connected
from workloads.process import StopCheck, WorkerProcess, run_worker
from workloads.records import record_id_of
from workloads.spec import ConsumerGroupSpec

if TYPE_CHECKING:
    from core.context import RunContext

_STRATEGY = {"eager": "range", "range": "range", "roundrobin": "roundrobin",
             "cooperative-sticky": "cooperative-sticky"}


def consumer_config(spec: ConsumerGroupSpec, member: str, bootstrap: str) -> dict[str, Any]:
    conf: dict[str, Any] = {
        "bootstrap.servers": bootstrap,
        "group.id": spec.group_id,
        "client.id": member,
        "partition.assignment.strategy": _STRATEGY[spec.assignment],
        "enable.auto.commit": spec.commit == "auto",
        "auto.commit.interval.ms": spec.auto_commit_interval_ms,
        "isolation.level": spec.isolation,
        "session.timeout.ms": spec.session_timeout_ms,
        "max.poll.interval.ms": spec.max_poll_interval_ms,
        "auto.offset.reset": spec.auto_offset_reset,
    }
    if spec.static_membership:
        conf["group.instance.id"] = f"{spec.group_id}-{member}"
    if spec.group_protocol == "consumer":
        # KIP-848: the broker assigns and times the session; librdkafka refuses both settings
        conf["group.protocol"] = "consumer"
        del conf["partition.assignment.strategy"], conf["session.timeout.ms"]
    conf.update(spec.client_config)
    return conf


def _parts(parts) -> list[list]:
    return [[p.topic, p.partition] for p in parts]


class _Member:
    """The body of one member process."""

    def __init__(self, spec: ConsumerGroupSpec, member: str, incarnation: int, bootstrap: str,
                 run_dir: str, run_id: str):
        self.spec, self.member, self.incarnation = spec, member, incarnation
        wn = f"{member}-{incarnation}-{uuid.uuid4().hex[:6]}"
        self.consumed = HistoryWriter(run_dir, "consumed", run_id, writer_name=wn,
                                      flush_rows=20000, flush_seconds=spec.history_flush_s)
        self.commits = HistoryWriter(run_dir, "commits", run_id, writer_name=wn,
                                     flush_seconds=spec.history_flush_s)
        self.events = EventLog(run_dir, run_id, writer_name=f"{wn}-events")
        self.processed: dict[tuple[str, int], int] = {}   # next offset, recorded not committed
        # consumed.poll_seq and .assignment (the spec): the order records reached us, and
        # the assignment generation they arrived in. A restarted member keeps its name, so
        # its generations start past any earlier incarnation's (1 << 20 each): the
        # checker tells one instance's generations apart by (consumer, assignment) alone.
        self.poll_seq = 0
        self.assignment = incarnation << 20
        conf = consumer_config(spec, member, bootstrap)
        if spec.commit == "auto":
            conf["on_commit"] = self._on_commit
        conf["error_cb"] = lambda err: self._event("client-error", error=err.name(),
                                                   reason=err.str())
        self.consumer = Consumer(conf)
        self.consumer.subscribe(list(spec.topics), on_assign=self._on_assign,
                                on_revoke=self._on_revoke, on_lost=self._on_lost)

    def _event(self, name: str, **detail: Any) -> None:
        self.events.emit("client", name, self.member, group_id=self.spec.group_id,
                         incarnation=self.incarnation, **detail)
        if name == "rebalance":
            self.events.flush()         # rare, and the timeline wants it on disk now

    # -- rebalance callbacks (run inside consume()) --
    def _on_assign(self, consumer, parts) -> None:
        self.assignment += 1
        self._event("rebalance", type="assigned", partitions=_parts(parts),
                    protocol=self.spec.assignment)

    def _on_revoke(self, consumer, parts) -> None:
        self.assignment += 1
        self._event("rebalance", type="revoked", partitions=_parts(parts),
                    protocol=self.spec.assignment)
        revoked = {(p.topic, p.partition) for p in parts}
        if self.spec.commit == "after-processing":
            self.commit(revoked)
        for k in revoked:       # not ours any more: a later commit would overwrite the new
            self.processed.pop(k, None)     # owner's (the broker does not check who owns)

    def _on_lost(self, consumer, parts) -> None:
        self.assignment += 1
        self._event("rebalance", type="lost", partitions=_parts(parts),
                    protocol=self.spec.assignment)
        for p in parts:        # not ours any more: committing would be rejected
            self.processed.pop((p.topic, p.partition), None)

    # -- commits --
    def _on_commit(self, err, parts) -> None:
        if err is not None and err.code() == KafkaError._NO_OFFSET:
            return                      # nothing to commit: no attempt was made
        self._record_commits(parts, err)

    def _record_commits(self, parts, err=None) -> None:
        ts = now_us()
        for tp in parts:
            if tp.offset < 0:
                continue
            e = err or tp.error
            self.commits.append({"consumer": self.member, "group_id": self.spec.group_id,
                                 "topic": tp.topic, "partition": tp.partition,
                                 "offset": tp.offset, "ok": e is None,
                                 "error": e.name() if e is not None else None, "ts_us": ts})

    def commit(self, only: set[tuple[str, int]] | None = None) -> None:
        """Commit recorded offsets: rows are on disk first (at-least-once). An offset
        whose commit failed stays to be committed by the next attempt: a commit names
        only the partitions read since the last, so one dropped after a failure (a
        cooperative rebalance's ILLEGAL_GENERATION) was never committed, and the
        partition's next owner read it all again (claim 12, benchmarks/RESULTS.md)."""
        todo = {k: v for k, v in self.processed.items() if only is None or k in only}
        if not todo:
            return
        self.consumed.flush()
        offsets = [TopicPartition(t, p, o) for (t, p), o in todo.items()]
        try:
            result = self.consumer.commit(offsets=offsets, asynchronous=False)
            self._record_commits(result)
            done = {(tp.topic, tp.partition) for tp in result if tp.error is None}
        except KafkaException as e:
            self._record_commits(offsets, e.args[0])
            done = set()
        for k in done:
            if self.processed.get(k) == todo[k]:
                del self.processed[k]
        self.commits.flush()

    # -- the loop --
    def run(self, stop_event, parent_pid: int) -> None:
        spec, member = self.spec, self.member
        group, iso = spec.group_id, spec.isolation
        after = spec.commit == "after-processing"
        interval = spec.commit_interval_ms / 1000
        last_commit = time.monotonic()
        stopping = StopCheck(stop_event, parent_pid)
        self._event("consumer-start", pid=os.getpid())
        while not stopping():
            msgs = self.consumer.consume(500, 0.2)
            if msgs:
                recv = now_us()
                cols: dict[str, list] = {"topic": [], "partition": [], "offset": [], "key": [],
                                         "record_id": [], "leader_epoch": []}
                for m in msgs:
                    if m.error() is not None:
                        continue
                    t, p, o = m.topic(), m.partition(), m.offset()
                    k = m.key()
                    cols["topic"].append(t)
                    cols["partition"].append(p)
                    cols["offset"].append(o)
                    cols["key"].append(k.decode(errors="replace") if k is not None else None)
                    cols["record_id"].append(record_id_of(m.value()))
                    cols["leader_epoch"].append(m.leader_epoch())
                    if after:
                        self.processed[(t, p)] = o + 1
                n = len(cols["offset"])
                cols["poll_seq"] = range(self.poll_seq, self.poll_seq + n)
                self.poll_seq += n
                self.consumed.append_columns(cols, consumer=member, group_id=group, phase="run",
                                             isolation=iso, recv_ts_us=recv,
                                             assignment=self.assignment)
            else:
                self.consumed.maybe_flush()
                self.commits.maybe_flush()
                self.events.maybe_flush()
            if after and time.monotonic() - last_commit >= interval:
                last_commit = time.monotonic()
                self.commit()

    def close(self) -> None:
        """Clean close: final commit (after-processing), leave the group, flush."""
        try:
            if self.spec.commit == "after-processing":
                self.commit()
            self.consumer.close()        # auto mode: librdkafka commits here (on_commit)
            self._event("consumer-closed")
        finally:
            self.consumed.close()
            self.commits.close()
            self.events.close()


def run_member(stop_event, parent_pid: int, spec_json: str, member: str, incarnation: int,
               bootstrap: str, run_dir: str, run_id: str) -> None:
    """Entry point of a member process."""
    spec = ConsumerGroupSpec.model_validate_json(spec_json)
    m = _Member(spec, member, incarnation, bootstrap, run_dir, run_id)
    run_worker(m, stop_event, parent_pid, "consumer", m._event)


class ConsumerGroup:
    """Parent-side handle: start M members, bounce/crash them, stop them all."""

    def __init__(self, spec: ConsumerGroupSpec, run: "RunContext"):
        self.spec, self.bootstrap = connected(spec, run), run.bootstrap
        self.run_dir, self.run_id, self.events = run.dir, run.run_id, run.events
        self._workers: dict[str, WorkerProcess] = {}
        self._incarnation: dict[str, int] = {}
        self._stopping = threading.Event()
        self._churn: Churn | None = None

    def start(self) -> "ConsumerGroup":
        for m in self.spec.member_names:
            self.start_member(m)
        if self.spec.churn is not None:
            self._churn = Churn(
                self.spec.churn, self.spec.member_names, name=f"churn-{self.spec.group_id}",
                bounce=lambda m, clean, down_s: self.bounce(m, clean=clean, down_s=down_s),
                on_error=lambda m, e: self._event("consumer-churn-error", m, error=e),
                stopping=self._stopping).start()
        return self

    def start_member(self, member: str) -> None:
        if member in self._workers and self._workers[member].is_alive():
            raise RuntimeError(f"consumer {member} is already running")
        inc = self._incarnation.get(member, -1) + 1
        self._incarnation[member] = inc
        logs = Path(self.run_dir) / "workloads"
        logs.mkdir(parents=True, exist_ok=True)
        self._workers[member] = WorkerProcess(
            f"consumer-{member}", run_member, self.spec.model_dump_json(), member, inc,
            self.bootstrap, self.run_dir, self.run_id,
            log_path=logs / f"{self.spec.group_id}-{member}-{inc}.log").start()

    def members(self) -> list[str]:
        return list(self._workers)

    def incarnations(self) -> dict[str, int]:
        """member -> its current incarnation (0 for the first; +1 per restart)."""
        return dict(self._incarnation)

    def exitcode(self, member: str) -> int | None:
        """0 after a clean stop, -9 after a kill; anything else: the member crashed."""
        return self._workers[member].exitcode if member in self._workers else None

    def alive(self, member: str) -> bool:
        return member in self._workers and self._workers[member].is_alive()

    def close_member(self, member: str, timeout: float = 30.0) -> None:
        """Clean close (commit, leave group, flush)."""
        self._workers[member].stop(timeout)
        self._event("consumer-close", member, clean=True)

    def kill_member(self, member: str) -> None:
        """Hard kill: SIGKILL the process, nothing is flushed or committed by it."""
        self._workers[member].kill()
        self._event("consumer-crash", member, signal="SIGKILL")

    def bounce(self, member: str, *, clean: bool = True, down_s: float = 0.0) -> bool:
        """Close (clean) or kill (hard) a member, stay away `down_s`, then start a new
        incarnation; False, with the member left down, when the group stops meanwhile."""
        self.close_member(member) if clean else self.kill_member(member)
        if self._stopping.wait(down_s):
            return False
        self.start_member(member)
        self._event("consumer-restart", member, incarnation=self._incarnation[member])
        return True

    def stop(self, timeout: float = 30.0) -> None:
        self._stopping.set()
        if self._churn is not None:
            self._churn.join(timeout)       # a bounce in progress ends first
        for w in self._workers.values():
            w.stop_event.set()
        for w in self._workers.values():
            if w.is_alive():
                w.stop(timeout)
        for member, w in self._workers.items():
            if w.died:
                self._event(WORKLOAD_DIED, member, workload="consumer", exitcode=w.exitcode,
                            incarnation=self._incarnation[member], source="exit code")

    def _event(self, name: str, member: str, **detail: Any) -> None:
        if self.events is not None:
            self.events.emit("client", name, member, group_id=self.spec.group_id, **detail)
