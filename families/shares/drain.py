"""The final share drain: after the heal, one member (`drain`) per group accepts
everything it is given, and the harness decides when it has waited long enough.

Long enough is not simply "nothing arrived for the lock duration". A share group
member that dies stays in the group until its session times out
(`share.session.timeout.ms`, 45 s by default), and since Kafka 4.1 a partition can be
assigned to that member alone (KAFKA-19362); its records reach nobody, the drain
included, until then. Seen here: a run whose drain gave up after 20 s quiet reported
526 records lost that were waiting for a dead member's session to end. So the drain:

- runs at least the lock duration + 5 s (a record locked to a member cut off without a
  FIN comes back by then; an accepted record delivered again would show up);
- then stops as soon as every acknowledged record of the group's topics is settled
  (accepted or rejected by a member, its answer ok or lost, or received by the drain);
- otherwise goes on until nothing has arrived for the session timeout + the lock + 5 s
  (what is still missing then is share_lost), or `drain_timeout_s` (incomplete: the
  phase fails).
"""
from __future__ import annotations

import json
import time
from dataclasses import dataclass
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc

from core.history import read_table

SETTLED_ACKS = ("accept", "reject")


@dataclass
class DrainPlan:
    min_s: float
    quiet_s: float
    timeout_s: float


def plan(lock_ms: int, session_ms: int, quiet_s: float | None, timeout_s: float) -> DrainPlan:
    return DrainPlan(min_s=lock_ms / 1000 + 5,
                     quiet_s=quiet_s if quiet_s is not None else (session_ms + lock_ms) / 1000 + 5,
                     timeout_s=timeout_s)


def pending_positions(run_dir: str, group_id: str, topics: tuple[str, ...]) -> set[tuple]:
    """The acknowledged records of the group's topics no member settled (the rows of
    members already stopped are in share_deliveries)."""
    produced = read_table(run_dir, "produced").select(["topic", "partition", "offset", "status"])
    acked = produced.filter(pc.and_(pc.equal(produced["status"], "acked"),
                                    pc.is_in(produced["topic"], value_set=pa.array(list(topics)))))
    want = set(zip(*(acked[c].to_pylist() for c in ("topic", "partition", "offset")), strict=True))
    rows = read_table(run_dir, "share_deliveries")
    settled = {(r["topic"], r["partition"], r["offset"]) for r in rows.to_pylist()
               if r["group_id"] == group_id and r["ack"] in SETTLED_ACKS
               and r["ack_result"] in ("ok", "unknown")}
    return want - settled


class JournalWatch:
    """The drain member's journal, read as it grows: what it has received, and when."""

    def __init__(self, path: Path):
        self.path, self.offset = path, 0
        self.received: set[tuple] = set()
        self.last_recv = time.monotonic()

    def poll(self) -> None:
        if not self.path.exists():
            return
        with self.path.open("rb") as f:
            f.seek(self.offset)
            data = f.read()
        end = data.rfind(b"\n") + 1          # a line being written waits for the next poll
        self.offset += end
        for line in data[:end].splitlines():
            if b'"recv"' not in line:
                continue
            try:
                recs = json.loads(line)["recs"]
            except (ValueError, KeyError):
                continue
            self.received.update((t, p, o) for t, p, o, *_ in recs)
            self.last_recv = time.monotonic()


def wait_for_drain(p: DrainPlan, watch: JournalWatch, pending: set[tuple], alive) -> bool:
    """Until the drain may stop (module docstring); True when it finished (settled, or
    quiet long enough), False at the timeout or when the member died."""
    started = time.monotonic()
    while True:
        time.sleep(0.5)
        watch.poll()
        now = time.monotonic()
        if not alive():
            return False
        if now - started >= p.min_s and pending <= watch.received:
            return True
        if now - watch.last_recv >= p.quiet_s:
            return True
        if now - started >= p.timeout_s:
            return False
