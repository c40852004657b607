"""Hand-built histories for the reconciler tests, written through HistoryWriter."""
from __future__ import annotations

import pyarrow.parquet as pq

from core.history import HistoryWriter, record_id
from families import FAMILIES
from spark_reports import pipeline
from verifiers.judgement import Judgement
from verifiers.verdict import judge

T0 = 1_700_000_000_000_000


class History:
    """A tiny history; every row goes through the real writer (the real file format)."""

    def __init__(self, run_dir, run_id: str = "cases"):
        self.run_dir = run_dir
        kw = dict(flush_rows=10_000_000, flush_seconds=1e9)
        self.w = {t: HistoryWriter(run_dir, t, run_id, writer_name=f"test-{t}", **kw)
                  for t in ("produced", "consumed", "commits", "events")}
        self.clock = T0

    def tick(self, us: int = 1000) -> int:
        self.clock += us
        return self.clock

    def send(self, topic: str, producer: str, seq: int, *, status: str = "acked",
             partition: int | None = 0, offset: int | None = None, send_ts: int | None = None,
             ack_ts: int | None = None, txn: tuple[str, int, str] | None = None,
             error: str | None = None, acked_by: int | None = None) -> str:
        rid = record_id(producer, seq)
        send_ts = send_ts if send_ts is not None else self.tick()
        if ack_ts is None and status != "indeterminate":
            ack_ts = send_ts + 500
        self.w["produced"].append({
            "producer": producer, "seq": seq, "record_id": rid, "topic": topic,
            "partition": partition, "offset": offset if status == "acked" else None,
            "status": status, "error": error, "send_ts_us": send_ts, "ack_ts_us": ack_ts,
            "txn_id": txn[0] if txn else None, "txn_seq": txn[1] if txn else None,
            "txn_outcome": txn[2] if txn else None, "acked_by": acked_by})
        return rid

    def consume(self, topic: str, partition: int, offset: int, rid: str | None, *,
                consumer: str = "c0", group: str | None = "g0", phase: str = "run",
                isolation: str = "read_uncommitted", ts: int | None = None,
                poll: tuple[int, int] | None = None, leader_epoch: int | None = None) -> None:
        """poll: (poll_seq, assignment), null when not given."""
        self.w["consumed"].append({
            "consumer": consumer, "group_id": group, "phase": phase, "topic": topic,
            "partition": partition, "offset": offset, "record_id": rid,
            "isolation": isolation, "recv_ts_us": ts if ts is not None else self.tick(),
            "poll_seq": poll[0] if poll else None, "assignment": poll[1] if poll else None,
            "leader_epoch": leader_epoch})

    def drain(self, topic: str, partition: int, offset: int, rid: str | None,
              isolation: str = "read_uncommitted") -> None:
        self.consume(topic, partition, offset, rid, consumer="drain", group=None,
                     phase="drain", isolation=isolation)

    def commit(self, topic: str, partition: int, offset: int, *, group: str = "g0",
               consumer: str = "c0", ok: bool = True) -> None:
        self.w["commits"].append({"consumer": consumer, "group_id": group, "topic": topic,
                                  "partition": partition, "offset": offset, "ok": ok,
                                  "error": None if ok else "REBALANCE_IN_PROGRESS",
                                  "ts_us": self.tick()})

    def event(self, kind: str, name: str, ts_us: int, target: str | None = None,
              detail: str = "{}") -> None:
        self.w["events"].append({"ts_us": ts_us, "kind": kind, "name": name, "target": target,
                                 "detail": detail})

    def close(self) -> None:
        for w in self.w.values():
            w.close()


def reconcile(run_dir, spark, facts: dict | None = None, families=FAMILIES):
    """The reconciler on a hand-built history, judged against the default expectations,
    every fact unknown but those in `facts`."""
    j = Judgement.without_model("unknown: a synthetic history", html=False)
    known = {**j.facts, **(facts or {})}
    sources = {**j.fact_sources, **{f: "test" for f in facts or {}}}
    return pipeline.reconcile(
        str(run_dir), {"notes": [], "config": {}}, families, j.threshold_s,
        lambda s, why: judge(s, j.expectations, known, sources), spark=spark, write_html=False)


def anomaly_rows(run_dir, kind: str) -> list[dict]:
    """The rows the reconciler wrote for one anomaly kind."""
    return pq.read_table(run_dir / "report" / "anomalies" / kind).to_pylist()
