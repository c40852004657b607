"""The events table, read on the driver: phases, fault windows, observations.

Events are few (one row per phase, fault, heal and leader/ISR change), so they
are collected and parsed in Python. Parsing is tolerant: `detail` is a JSON
object whose keys depend on the writer; unknown or malformed details are kept
as raw text instead of failing the run.

Keys read from `detail`:
- fault/heal: `fault_id` (pairs a heal with its fault); fault: `inject_s`, the
  seconds its inject took (the fault is wholly in effect from then on).
- observe (name `leader`, `isr`, …): `topic`, `partition`, `leader`, `isr`.
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class FaultWindow:
    fault_id: str
    name: str
    target: str | None
    start_us: int
    end_us: int          # heal time, or the end of the run when never healed
    healed: bool
    applied_us: int = 0  # when its inject ended (the fault row's inject_s; else start_us)


@dataclass(frozen=True)
class Observation:
    ts_us: int
    name: str
    target: str | None
    topic: str | None
    partition: int | None
    leader: Any
    isr: tuple | None
    detail: dict


@dataclass
class Timeline:
    faults: list[FaultWindow] = field(default_factory=list)
    observations: list[Observation] = field(default_factory=list)
    phases: list[tuple[int, str]] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


def _detail(raw: str | None) -> dict:
    if not raw:
        return {}
    try:
        d = json.loads(raw)
    except (ValueError, TypeError):
        return {"raw": raw}
    return d if isinstance(d, dict) else {"value": d}


def _as_int(v: Any) -> int | None:
    try:
        return int(v)
    except (TypeError, ValueError):
        return None


def parse_events(rows: list[dict], run_end_us: int | None) -> Timeline:
    """rows: dicts with ts_us, kind, name, target, detail (as read from the table)."""
    tl = Timeline()
    rows = sorted(rows, key=lambda r: r["ts_us"])
    open_faults: dict[str, dict] = {}
    order: list[str] = []
    heals: dict[str, int] = {}
    for i, r in enumerate(rows):
        d = _detail(r.get("detail"))
        kind = r["kind"]
        if kind == "phase":
            tl.phases.append((r["ts_us"], r["name"]))
        elif kind == "fault":
            fid = str(d.get("fault_id") or f"{r['name']}@{r['ts_us']}#{i}")
            if fid in open_faults:
                tl.notes.append(f"fault_id {fid} injected twice; the later one is ignored")
                continue
            open_faults[fid] = {**r, "detail": d}
            order.append(fid)
        elif kind == "heal":
            fid = d.get("fault_id")
            if fid is None or str(fid) not in open_faults:
                tl.notes.append(f"heal {r['name']} at {r['ts_us']} matches no fault "
                                f"(fault_id {fid!r}); ignored")
                continue
            heals.setdefault(str(fid), r["ts_us"])
        elif kind == "observe":
            isr = d.get("isr")
            tl.observations.append(Observation(
                ts_us=r["ts_us"], name=r["name"], target=r.get("target"),
                topic=d.get("topic") if isinstance(d.get("topic"), str) else None,
                partition=_as_int(d.get("partition")), leader=d.get("leader"),
                isr=tuple(isr) if isinstance(isr, list) else None, detail=d))
    last_ts = rows[-1]["ts_us"] if rows else 0
    end_default = max(run_end_us or 0, last_ts)
    for fid in order:
        f = open_faults[fid]
        healed = fid in heals
        if not healed:
            tl.notes.append(f"fault {f['name']} ({fid}) was never healed; its window runs "
                            f"to the end of the run")
        end_us = heals[fid] if healed else end_default
        inject_s = f["detail"].get("inject_s")
        applied = f["ts_us"] + int(inject_s * 1e6) if isinstance(inject_s, (int, float)) else f["ts_us"]
        tl.faults.append(FaultWindow(
            fault_id=fid, name=f["name"], target=f.get("target"), start_us=f["ts_us"],
            end_us=end_us, healed=healed, applied_us=min(applied, end_us)))
    return tl


def touched_partitions(fault: FaultWindow, tl: Timeline, all_partitions: list[tuple[str, int]],
                       written: list[tuple[str, int]], after_heal_us: int
                       ) -> tuple[list[tuple[str, int]], str]:
    """The partitions a fault touched (the spec), and how that was decided: those
    whose leader or ISR the observer saw change between its injection and
    `after_heal_us` after its heal; if none changed, `written` (every partition
    written while it was active)."""
    seen = [(o.topic, o.partition) for o in tl.observations
            if o.name in ("leader", "isr") and o.partition is not None
            and fault.start_us <= o.ts_us <= fault.end_us + after_heal_us]
    got = sorted({(t, q) for topic, p in seen for (t, q) in all_partitions
                  if q == p and (topic is None or t == topic)})
    if got:
        return got, "leader/ISR changes observed"
    return sorted(written), "written while the fault was active (no leader/ISR change)"
