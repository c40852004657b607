"""One share-group member (KIP-932) on librdkafka: confluent-kafka's ShareConsumer,
in a process of its own, writing its journal (workloads/share_log.py).

It polls batches, and for each record (explicit mode) waits `processing_ms`, then
accepts, releases or rejects it as its seeded draw says; the decisions go to the
broker on the next poll, a commit_async or a commit_sync (`ack_send`). In implicit
mode the client accepts a batch when the next poll is made. The acknowledgement
commit callback's answers are the `result` lines.

A journal line is written with one os.write on an O_APPEND descriptor, before the
call that acts on it returns to the client (an `ack` line before its batch's
acknowledgements can be sent), so a SIGKILL leaves what was decided on disk.
"""
from __future__ import annotations

import json
import os
import random
import time
from dataclasses import asdict, dataclass, field
from typing import Any

from confluent_kafka import AcknowledgeType, KafkaException, ShareConsumer

from core.history import WORKLOAD_DIED, EventLog, now_us
from workloads.process import died_detail, parent_gone
from workloads.share_log import journal_path

_TYPES = {"accept": AcknowledgeType.ACCEPT, "release": AcknowledgeType.RELEASE,
          "reject": AcknowledgeType.REJECT}
HEAD_BYTES = 64


@dataclass(frozen=True)
class ShareMemberSettings:
    """What one member does: plain data, handed to its process as JSON."""
    group_id: str
    topics: tuple[str, ...]
    ack_mode: str = "explicit"            # implicit | explicit
    release_rate: float = 0.0
    reject_rate: float = 0.0
    processing_ms: float = 0.0
    ack_send: str = "async"               # poll | sync | async
    max_poll_records: int = 100
    seed: int = 0
    client_config: dict[str, Any] = field(default_factory=dict)
    accept_all: bool = False              # the final drain: accept everything, commit_sync


class Journal:
    def __init__(self, path):
        path.parent.mkdir(parents=True, exist_ok=True)
        self.fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)

    def write(self, **line: Any) -> None:
        os.write(self.fd, (json.dumps(line, separators=(",", ":")) + "\n").encode())

    def close(self) -> None:
        os.close(self.fd)


def share_config(s: ShareMemberSettings, member: str, bootstrap: str) -> dict[str, Any]:
    return {"bootstrap.servers": bootstrap, "group.id": s.group_id, "client.id": member,
            "share.acknowledgement.mode": "explicit" if s.accept_all else s.ack_mode,
            "max.poll.records": s.max_poll_records, **s.client_config}


class ShareMember:
    """The body of one member process."""

    def __init__(self, s: ShareMemberSettings, member: str, bootstrap: str, run_dir: str,
                 run_id: str):
        self.s, self.member = s, member
        self.journal = Journal(journal_path(run_dir, s.group_id, member))
        self.events = EventLog(run_dir, run_id, writer_name=f"share-{s.group_id}-{member}-events")
        self.rng = random.Random(f"{s.seed}:{s.group_id}:{member}")
        self.explicit = s.accept_all or s.ack_mode == "explicit"
        self.last_batch: list = []         # implicit mode: accepted by the next poll
        self.received = 0
        self.last_recv = time.monotonic()
        conf = share_config(s, member, bootstrap)
        conf["error_cb"] = lambda err: self.journal.write(
            ev="error", ts=now_us(), err=err.name(), reason=err.str(), fatal=err.fatal())
        self.consumer = ShareConsumer(conf)
        self.consumer.set_acknowledgement_commit_callback(self._on_result)
        self.journal.write(ev="start", ts=now_us(), member=member, group=s.group_id,
                           mode="explicit" if self.explicit else "implicit",
                           client="librdkafka", pid=os.getpid())
        self.consumer.subscribe(list(s.topics))

    def _on_result(self, offsets, exc) -> None:
        err = None if exc is None else _error_name(exc)
        self.journal.write(ev="result", ts=now_us(), err=err, parts=[
            [tp.topic, tp.partition, sorted(offs)] for tp, offs in offsets.items()])

    def step(self) -> None:
        """One poll, and what the member does with its batch."""
        if self.last_batch:                # implicit: this poll accepts the previous batch
            ts = now_us()
            self.journal.write(ev="ack", acks=[[t, p, o, "accept", ts] for t, p, o in self.last_batch])
            self.last_batch = []
        msgs = [m for m in self.consumer.poll(0.2) or () if m.error() is None]
        if not msgs:
            return
        self.received += len(msgs)
        self.last_recv = time.monotonic()
        self.journal.write(ev="recv", ts=now_us(), recs=[
            [m.topic(), m.partition(), m.offset(), m.delivery_count(),
             (m.value() or b"")[:HEAD_BYTES].decode("latin-1")] for m in msgs])
        if not self.explicit:
            self.last_batch = [(m.topic(), m.partition(), m.offset()) for m in msgs]
            return
        self._decide(msgs)
        self._send()

    def _decide(self, msgs) -> None:
        acks, refused = [], []
        for m in msgs:
            if self.s.processing_ms and not self.s.accept_all:
                time.sleep(self.s.processing_ms / 1000)
            ack = self._draw()
            pos = [m.topic(), m.partition(), m.offset()]
            try:
                self.consumer.acknowledge(m, _TYPES[ack])
                acks.append([*pos, ack, now_us()])
            except KafkaException as e:
                refused.append(([*pos, ack], _error_name(e)))
            except Exception as e:  # noqa: BLE001 - IllegalStateException and kin
                refused.append(([*pos, ack], type(e).__name__))
        if acks:
            self.journal.write(ev="ack", acks=acks)
        for entry, err in refused:
            self.journal.write(ev="refused", ts=now_us(), acks=[entry], err=err)

    def _sync_before_close(self) -> None:
        try:
            result = self.consumer.commit_sync(10)
            errs = {f"{tp.topic}-{tp.partition}": _error_name(e)
                    for tp, e in (result or {}).items() if e is not None}
            self.journal.write(ev="commit", ts=now_us(), call="close", errs=errs)
        except Exception as e:  # noqa: BLE001 - the close still goes on
            self.journal.write(ev="commit", ts=now_us(), call="close", errs={"*": type(e).__name__})

    def _draw(self) -> str:
        if self.s.accept_all:
            return "accept"
        x = self.rng.random()
        if x < self.s.release_rate:
            return "release"
        return "reject" if x < self.s.release_rate + self.s.reject_rate else "accept"

    def _send(self) -> None:
        how = "sync" if self.s.accept_all else self.s.ack_send
        try:
            if how == "async":
                self.consumer.commit_async()
            elif how == "sync":
                result = self.consumer.commit_sync(30)
                errs = {f"{tp.topic}-{tp.partition}": _error_name(e)
                        for tp, e in (result or {}).items() if e is not None}
                self.journal.write(ev="commit", ts=now_us(), call="sync", errs=errs)
        except KafkaException as e:
            self.journal.write(ev="commit", ts=now_us(), call=how, errs={"*": _error_name(e)})

    def close(self) -> None:
        """Clean close: the last batch's acknowledgements go with the final request; what
        the member still holds is released by the broker."""
        try:
            self.journal.write(ev="closing", ts=now_us())
            if self.last_batch:
                ts = now_us()
                self.journal.write(ev="ack", acks=[[t, p, o, "accept", ts] for t, p, o in self.last_batch])
                self.last_batch = []
            # the last decisions sent and answered here: close() sends them too, but its
            # answers reach no callback (seen: 42 accepts of a clean stop unanswered)
            self._sync_before_close()
            self.consumer.close()
            self.journal.write(ev="closed", ts=now_us())
        finally:
            self.journal.close()
            self.events.close()


def _error_name(e: BaseException) -> str:
    arg = e.args[0] if e.args else None
    name = getattr(arg, "name", None)
    return name() if callable(name) else type(e).__name__


def run_share_member(stop_event, parent_pid: int, settings_json: str, member: str,
                     bootstrap: str, run_dir: str, run_id: str, quiet_s: float | None = None,
                     timeout_s: float | None = None) -> None:
    """Entry point of a member process. With quiet_s (the drain), it stops by itself once
    nothing has arrived for quiet_s, or at timeout_s; it then exits 0 (done) or 3 (cut
    short while records still came)."""
    raw = json.loads(settings_json)
    s = ShareMemberSettings(**{**raw, "topics": tuple(raw["topics"])})
    m = ShareMember(s, member, bootstrap, run_dir, run_id)
    started = time.monotonic()
    complete = True
    try:
        while not (stop_event.is_set() or parent_gone(parent_pid)):
            m.step()
            if quiet_s is not None and time.monotonic() - m.last_recv > quiet_s:
                break
            if timeout_s is not None and time.monotonic() - started > timeout_s:
                complete = False
                break
    except BaseException as e:
        m.events.emit("client", WORKLOAD_DIED, member, workload="share-member",
                      group_id=s.group_id, **died_detail(e))
        raise
    finally:
        m.close()
    if not complete:
        raise SystemExit(3)


def settings_json(s: ShareMemberSettings) -> str:
    return json.dumps({**asdict(s), "topics": list(s.topics)})
