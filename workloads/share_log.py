"""A share-group member's journal, and how it becomes `share_deliveries` rows.

Both share clients (ours on librdkafka: workloads/share_member.py; Kafka's Java
KafkaShareConsumer: workloads/java_share.py) write one JSON object per line, in
this format, to `workloads/share/<group>/<member>.sharelog`:

    {"ev":"start","ts":T,"member":"s0","group":"g","mode":"explicit","client":"librdkafka"}
    {"ev":"recv","ts":T,"recs":[[topic, partition, offset, delivery_count|null, value head]]}
    {"ev":"ack","acks":[[topic, partition, offset, "accept"|"release"|"reject", T]]}
    {"ev":"refused","ts":T,"acks":[[topic, partition, offset, type]],"err":"..."}
    {"ev":"result","ts":T,"parts":[[topic, partition, [offsets]]],"err":null|"..."}
    {"ev":"commit","ts":T,"call":"sync","errs":{"t-0":"..."}}      (a cross-check only)
    {"ev":"error","ts":T,"err":"...","reason":"...","fatal":false}
    {"ev":"closing","ts":T} / {"ev":"closed","ts":T}

`ts` is µs on the host clock (containers share it). The librdkafka member appends
each line with one os.write on an O_APPEND descriptor, so what it wrote survives a
SIGKILL; the Java member prints them and the parent appends them.

The journal is converted once its member is gone (ShareLogConverter). A delivery is
a row when `recv` hands it to the application; the member's decision (`ack`) and the
broker's answer (`result`, the acknowledgement commit callback, which names offsets
but not types) are matched to the oldest open row at that position, so one member
holding two deliveries of one offset (its lock expired and it got the record again:
KIP-932 says so) is matched in order. When the journal ends, every row still open is
written with `ack_result = unknown` (its decision as made, or null): a member that
died leaves rows, never silence.

Matching in order is a guess when an answer comes while the member holds two or more
decided, unanswered deliveries of its offset: the callback names the offset, not the
delivery, and the two acknowledgements can go to different brokers (the leader moved
between the deliveries) and be answered in either order. Seen on Kafka 4.1.2: one
member got an offset from the old leader, resumed after a pause, and again from the
new leader; its acknowledgements went to both, answered UNKNOWN_TOPIC_OR_PARTITION and
ok (run 20261127-080523-c6af31: in order there, but nothing makes them so; RESULTS,
2026-11-27, and benchmarks/evidence/share-ack-across-coordinator-pause/). When such
overlapping deliveries get different answers, none of them is known to be the one
the broker confirmed: each is written `unknown`, its `ack_error` naming the answers
(`ambiguous: ok|UnknownTopicOrPartitionException`), so the checker counts no accept
as confirmed that may not have been. Equal answers are kept as they are.
"""
from __future__ import annotations

import itertools
import json
from collections import deque
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from core.history import HistoryWriter
from workloads.classify import share_ack_result
from workloads.records import record_id_of

JOURNAL_SUFFIX = ".sharelog"
CONVERTED_SUFFIX = ".converted"
AMBIGUOUS = "ambiguous: "        # ack_error of overlapping deliveries answered differently
NO_ANSWER = "no answer"


def journal_dir(run_dir: str | Path, group_id: str) -> Path:
    return Path(run_dir) / "workloads" / "share" / group_id


def journal_path(run_dir: str | Path, group_id: str, member: str) -> Path:
    return journal_dir(run_dir, group_id) / f"{member}{JOURNAL_SUFFIX}"


@dataclass
class ConvertResult:
    rows: int = 0
    unresolved: int = 0          # rows written with ack_result unknown at the journal's end
    unmatched: int = 0           # answered offsets that matched no decided delivery
    ambiguous: int = 0           # rows made unknown: overlapping deliveries answered differently
    errors: list[dict] = field(default_factory=list)   # the member's `error` lines


class ShareLogConverter:
    """One member's journal lines -> share_deliveries rows (feed each line, then finish)."""

    def __init__(self, member: str, group_id: str):
        self.member, self.group_id = member, group_id
        self.open: dict[tuple[str, int, int], deque[dict]] = {}
        self.done: list[dict] = []
        self.result = ConvertResult()
        self.overlaps: dict[int, list[dict]] = {}    # id -> deliveries whose answers may be swapped
        self._ids = itertools.count()

    def feed(self, line: str) -> None:
        line = line.strip()
        if not line.startswith("{"):
            return
        try:
            e = json.loads(line)
        except ValueError:
            return                      # a line cut by a kill: nothing after it was written
        handler = getattr(self, f"_on_{e.get('ev')}", None)
        if handler is not None:
            handler(e)

    def _on_recv(self, e: dict) -> None:
        for t, p, o, count, head in e["recs"]:
            self.open.setdefault((t, p, o), deque()).append({
                "consumer": self.member, "group_id": self.group_id, "topic": t,
                "partition": p, "offset": o, "delivery_count": count,
                "record_id": record_id_of(head.encode("latin-1")) if head else None,
                "recv_ts_us": e["ts"], "ack": None, "ack_ts_us": None,
                "ack_result": None, "ack_error": None})

    def _on_ack(self, e: dict) -> None:
        for t, p, o, ack, ts in e["acks"]:
            row = self._oldest((t, p, o), lambda r: r["ack"] is None)
            if row is not None:
                row.update(ack=ack, ack_ts_us=ts)

    def _on_refused(self, e: dict) -> None:
        for t, p, o, ack in e["acks"]:
            row = self._oldest((t, p, o), lambda r: r["ack"] is None)
            if row is not None:
                row.update(ack=ack, ack_ts_us=e["ts"], ack_result="error", ack_error=e.get("err"))
                self._close((t, p, o), row)

    def _on_result(self, e: dict) -> None:
        err = e.get("err")
        for t, p, offsets in e["parts"]:
            for o in offsets:
                decided = [r for r in self.open.get((t, p, o), ()) if r["ack"] is not None]
                if not decided:
                    self.result.unmatched += 1
                    continue
                if len(decided) > 1:
                    self._overlap(decided)
                decided[0].update(ack_result=share_ack_result(err), ack_error=err)
                self._close((t, p, o), decided[0])

    def _overlap(self, rows: list[dict]) -> None:
        """These deliveries (one position, all decided, none answered yet) may get their
        answers in any order: one set, merged with any set one of them is already in."""
        ids = {r["_overlap"] for r in rows if "_overlap" in r}
        into = min(ids) if ids else next(self._ids)
        members = self.overlaps.setdefault(into, [])
        for other in ids - {into}:
            members.extend(self.overlaps.pop(other))
        members.extend(r for r in rows if all(r is not m for m in members))   # by identity
        for r in members:
            r["_overlap"] = into

    def _on_error(self, e: dict) -> None:
        self.result.errors.append({k: e.get(k) for k in ("ts", "err", "reason", "fatal")})

    def _oldest(self, key, wanted) -> dict | None:
        return next((r for r in self.open.get(key, ()) if wanted(r)), None)

    def _close(self, key, row: dict) -> None:
        rows = self.open[key]
        rows.remove(row)
        if not rows:
            del self.open[key]
        self.done.append(row)

    def finish(self) -> list[dict]:
        """Every row: the resolved ones, then what was still open (ack_result unknown)."""
        for rows in self.open.values():
            for row in rows:
                row["ack_result"] = "unknown"
                self.result.unresolved += 1
                self.done.append(row)
        self.open = {}
        self._resolve_overlaps()
        self.result.rows = len(self.done)
        return sorted(self.done, key=lambda r: (r["recv_ts_us"], r["topic"], r["partition"], r["offset"]))

    def _resolve_overlaps(self) -> None:
        """Overlapping deliveries answered differently: none is known to be the one the
        broker confirmed, so each is unknown (the answers named); same answers stay."""
        for rows in self.overlaps.values():
            answers = sorted({r["ack_error"] or ("ok" if r["ack_result"] == "ok" else NO_ANSWER)
                              for r in rows})
            if len({(r["ack_result"], r["ack_error"]) for r in rows}) > 1:
                for r in rows:
                    r.update(ack_result="unknown", ack_error=AMBIGUOUS + "|".join(answers))
                    self.result.ambiguous += 1
        for r in self.done:
            r.pop("_overlap", None)
        self.overlaps = {}


def convert_journal(path: Path, run_dir: str | Path, run_id: str, group_id: str) -> ConvertResult:
    """One journal -> its rows in share_deliveries, in one part file named after it (so
    converting again rewrites the same file), then a `.converted` marker beside it."""
    member = path.name[: -len(JOURNAL_SUFFIX)]
    conv = ShareLogConverter(member, group_id)
    with path.open(encoding="utf-8", errors="replace") as f:
        for line in f:
            conv.feed(line)
    rows = conv.finish()
    writer = HistoryWriter(run_dir, "share_deliveries", run_id,
                           writer_name=f"share-{group_id}-{member}", flush_rows=1 << 40,
                           flush_seconds=float("inf"))
    writer.extend(rows)
    writer.close()
    path.with_name(path.name + CONVERTED_SUFFIX).write_text(json.dumps(
        {"rows": conv.result.rows, "unresolved": conv.result.unresolved,
         "unmatched": conv.result.unmatched, "ambiguous": conv.result.ambiguous}))
    return conv.result


def is_converted(path: Path) -> bool:
    """Whether a journal's rows are already in share_deliveries (its `.converted` marker)."""
    return path.with_name(path.name + CONVERTED_SUFFIX).exists()


def reconcile_share_run(run_dir: str | Path, run_id: str) -> dict[str, Any]:
    """Every journal of the run not yet converted (a run whose harness died before its
    members were stopped: `harness verify` calls this). Idempotent."""
    out: dict[str, Any] = {"journals": 0, "rows": 0, "unresolved": 0}
    root = Path(run_dir) / "workloads" / "share"
    for path in sorted(root.glob(f"*/*{JOURNAL_SUFFIX}")) if root.is_dir() else ():
        if is_converted(path):
            continue
        r = convert_journal(path, run_dir, run_id, path.parent.name)
        out["journals"] += 1
        out["rows"] += r.rows
        out["unresolved"] += r.unresolved
    return out
