"""Load that never came: each producing workload's plan against what it sent.

A plan (`LoadPlan`, built from the scenario model: harness/scenario/model.py
`Scenario.load_plans`) says how many records a workload was to send: rate × duration
(less the time a churned producer is planned to be away), capped by its `records`;
its `records` alone when it has no rate; none for a workload that sends as fast as
it can for its duration (then only "nothing at all" is short).

What it sent is read from the history's produced table on the driver, two columns
(producer, send_ts_us) by pyarrow:
- sent: its rows (every record sent has one, whatever its outcome), over its
  incarnations (`p0`, `p0.1` … for a producer that may be restarted);
- start delay: its first send after the workloads-start phase began (`load-start`
  when there is no such phase);
- longest gap: the longest time between two of its sends in a row (a transactional
  Java producer's sends are its transactions' beginnings).

A run that ends the load early (workload.end_after_faults_s: a `load-cut` phase event
at the moment it ends) plans each workload to that moment, not to its duration.

A workload is short when it sent less than `min_fraction` of its plan
(`report.min_load_fraction`, default 0.5); `load_shortfall` counts them and is judged
by default (verifiers/expectations.py). A fault that stalls a producer for seconds
(a leader killed under acks=all) does not make it short: our producers, Kafka's
VerifiableProducer and our Java transactional producer all throttle against the time
since they began, so they catch up once sends go through again; a producer sent 70 of
4 000 planned records (2 %) is short.
"""
from __future__ import annotations

import time
from dataclasses import dataclass, replace

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from core.history import LOAD_CUT
from core.timeline import Timeline
from spark_reports.storage import RunLocation

DEFAULT_MIN_LOAD_FRACTION = 0.5
NO_PLANS = "no load plan was given (verified without the run's scenario model)"


@dataclass(frozen=True)
class LoadPlan:
    """One producing workload's plan (module docstring)."""
    workload: str                   # its name in the history's produced.producer column
    kind: str                       # "producer", "Java transactional producer" …
    rate: float | None = None       # records/s; None: as fast as it can
    duration_s: float | None = None
    records: int | None = None      # stop after this many
    off_s: float = 0.0              # planned time away (churn: down_s per restart)
    restarts: bool = False          # its incarnations `<workload>.<n>` send for it
    min_fraction: float = DEFAULT_MIN_LOAD_FRACTION
    cut_to_s: float | None = None   # the run ended the load this long after it began

    @property
    def planned_s(self) -> float | None:
        """How long it was to send: its duration, or less when the run cut the load."""
        if self.duration_s is None or self.cut_to_s is None:
            return self.duration_s
        return min(self.duration_s, self.cut_to_s)

    @property
    def planned_records(self) -> int | None:
        if self.rate is not None and self.planned_s is not None:
            n = int(self.rate * max(0.0, self.planned_s - self.off_s))
            return n if self.records is None else min(n, self.records)
        return self.records

    @property
    def words(self) -> str:
        """The plan as the scenario says it: "200 records/s for 20 s"."""
        away = f", {self.off_s:g} s of it away (churn)" if self.off_s else ""
        if self.planned_s != self.duration_s:
            away += f", ended at {self.planned_s:.1f} s, after the faults (end_after_faults_s)"
        if self.rate is not None and self.duration_s is not None:
            cap = f", at most {self.records:,}" if self.records is not None else ""
            return f"{self.rate:g} records/s for {self.duration_s:g} s{cap}{away}"
        if self.records is not None:
            pace = f" at {self.rate:g}/s" if self.rate is not None else ""
            return f"{self.records:,} records{pace}{away}"
        span = f" for {self.duration_s:g} s" if self.duration_s is not None else ""
        return f"as fast as it can{span}{away}"

    def sends_as(self, producer: str) -> bool:
        """Whether the history's producer name is this workload (or an incarnation)."""
        if producer == self.workload:
            return True
        head, _, n = producer.rpartition(".")
        return self.restarts and head == self.workload and n.isdigit()


def read_sends(loc: RunLocation, files: list[str]) -> dict[str, np.ndarray]:
    """Each producer's send times (µs, sorted), from the produced files: two columns,
    the producer's dictionary-encoded, sorted once by (producer, time)."""
    parts = [pq.read_table(f, columns=["producer", "send_ts_us"], filesystem=loc.fs)
             for f in files]
    if not parts:
        return {}
    table = pa.concat_tables(parts)
    table = table.filter(pc.and_(pc.is_valid(table["producer"]), pc.is_valid(table["send_ts_us"])))
    if table.num_rows == 0:
        return {}
    names = pc.dictionary_encode(table["producer"]).combine_chunks()
    codes = names.indices.to_numpy(zero_copy_only=False)
    ts = table["send_ts_us"].combine_chunks().to_numpy(zero_copy_only=False)
    order = np.lexsort((ts, codes))
    codes, ts = codes[order], ts[order]
    cuts = np.flatnonzero(np.diff(codes)) + 1
    dictionary = names.dictionary.to_pylist()
    return {dictionary[int(c[0])]: t for c, t in zip(np.split(codes, cuts), np.split(ts, cuts),
                                                     strict=True)}


def load_start_us(tl: Timeline) -> int | None:
    """When the workloads began: the workloads-start phase, else load-start."""
    for name in ("workloads-start", "load-start"):
        at = [ts for ts, n in tl.phases if n == name]
        if at:
            return min(at)
    return None


def load_cut_us(tl: Timeline) -> int | None:
    """When the run ended the load early (workload.end_after_faults_s), or None."""
    return min((ts for ts, n in tl.phases if n == LOAD_CUT), default=None)


def measure(plan: LoadPlan, sends: dict[str, np.ndarray], start_us: int | None) -> dict:
    """One workload's plan against what it sent (module docstring)."""
    mine = sorted(p for p in sends if plan.sends_as(p))
    ts = np.sort(np.concatenate([sends[p] for p in mine])) if mine else np.array([], np.int64)
    planned, sent = plan.planned_records, int(ts.size)
    short = sent == 0 or (planned is not None and sent < plan.min_fraction * planned)
    return {"workload": plan.workload, "kind": plan.kind, "plan": plan.words,
            "planned": planned, "sent": sent, "producers": mine,
            "fraction": round(sent / planned, 4) if planned else None,
            "start_delay_s": (round((int(ts[0]) - start_us) / 1e6, 3)
                              if sent and start_us is not None else None),
            "longest_gap_s": round(int(np.diff(ts).max()) / 1e6, 3) if sent > 1 else None,
            "min_fraction": plan.min_fraction, "short": bool(short)}


def shortfall_words(row: dict) -> str:
    """"p0 (Java transactional producer) sent 70 of 4 000 planned records (1.8 %) …"."""
    who = f"{row['workload']} ({row['kind']})"
    if row["planned"] is None:
        said = f"{who} sent nothing ({row['plan']})"
    else:
        said = (f"{who} sent {row['sent']:,} of {row['planned']:,} planned records "
                f"({100 * (row['fraction'] or 0):.1f} %; {row['plan']}; below "
                f"{100 * row['min_fraction']:g} %)")
    if row["start_delay_s"] is not None:
        said += f"; first send {row['start_delay_s']:.1f} s after the workloads started"
    if row["longest_gap_s"] is not None:
        said += f", longest gap between sends {row['longest_gap_s']:.1f} s"
    return said


def summarize_load(summary: dict, plans, loc: RunLocation, files: list[str],
                   tl: Timeline) -> None:
    """summary["load"] (a row per workload), counts.load_shortfall and a problem per
    short workload; without plans (None) the count is absent and its note says why."""
    notes = summary.setdefault("count_notes", {})
    if plans is None:
        summary["load"] = {"judged": False, "why": NO_PLANS, "workloads": []}
        notes["load_shortfall"] = NO_PLANS
        return
    t = time.monotonic()
    sends = read_sends(loc, files)
    start, cut = load_start_us(tl), load_cut_us(tl)
    if cut is not None and start is not None:
        plans = [replace(p, cut_to_s=(cut - start) / 1e6) for p in plans]
    rows = [measure(p, sends, start) for p in plans]
    short = [r for r in rows if r["short"]]
    summary["counts"]["load_shortfall"] = len(short)
    summary["load"] = {"judged": True, "workloads": rows}
    if short:
        notes["load_shortfall"] = "; ".join(shortfall_words(r) for r in short)[:600]
        summary["problems"] = sorted(
            [*summary.get("problems", []),
             *({"kind": "load-shortfall", "at_us": None, "text": shortfall_words(r)} for r in short)],
            key=lambda p: (p["at_us"] is None, p["at_us"] or 0))
    summary.setdefault("step_seconds", {})["load_plan"] = round(time.monotonic() - t, 3)
