"""The events table, read on the driver: phases, fault windows, observations, and
which fault each thing seen belongs to.

Events are few (one row per phase, fault, heal and leader/ISR change), so they
are collected and parsed in Python. Parsing is tolerant: `detail` is a JSON
object whose keys depend on the writer; unknown or malformed details are kept
as raw text instead of failing the run.

Keys read from `detail`:
- fault/heal: `fault_id` (pairs a heal with its fault); fault: `inject_s`, the
  seconds its inject took (the fault is wholly in effect from then on); `label`
  and `description`, the scenario's name for it and what it would do in words
  (faults.base); `inject_error`, why its inject failed; heal: what the heal saw
  (`broker_running_at_heal`, `not_ready`). A heal row with `heal_error` is a heal
  that failed (the fault stayed in effect and heal-all tried again): the first one is
  kept as the fault's `heal_error`, and the heal is the row without it.
- observe (name `leader`, `isr`, `controller`): `topic`, `partition`, `leader`, `isr`.
- client: kept as they are (`workload-died`, `client-leader`, rebalances …).

Which fault a thing seen at a moment belongs to (`owner`, the history spec): among
the faults injected at or before that moment and healed no more than
AFTER_HEAL_US before it, the one injected last; none if no fault qualifies. A
window is seen at its start plus the threshold (when it became a window), a
leader/ISR/controller change at its `observe` time, an anomaly row at its ack.
A fault whose inject failed (`not_injected`) owns nothing: it did not happen as
planned, and what an earlier fault caused must not be charged to it (a pause of a
broker that an earlier kill had stopped would take the kill's ISR shrink).
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

# How long after a heal the spec still charges what is seen to the fault.
AFTER_HEAL_US = 10_000_000


@dataclass(frozen=True)
class FaultWindow:
    fault_id: str
    name: str
    target: str | None
    start_us: int
    end_us: int          # heal time, or the end of the run when never healed
    healed: bool
    applied_us: int = 0  # when its inject ended (the fault row's inject_s; else start_us)
    detail: dict = field(default_factory=dict)        # the fault row's
    heal_detail: dict = field(default_factory=dict)   # the heal row's
    heal_error: str | None = None                     # why its (first) heal failed

    @property
    def inject_error(self) -> str | None:
        """Why its inject failed (faults.base records it in the fault row), or None."""
        e = self.detail.get("inject_error")
        return str(e) if e else None

    @property
    def not_injected(self) -> bool:
        """Its inject failed: it owns no window and no change (Timeline.owner)."""
        return self.inject_error is not None

    @property
    def label(self) -> str:
        """The scenario's name for it ("timeline[1] partition"), else the fault's."""
        return str(self.detail.get("label") or self.name)

    @property
    def description(self) -> str | None:
        return self.detail.get("description")

    @property
    def nodes(self) -> list[str]:
        return [n for n in (self.target or "").split(",") if n]


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


@dataclass(frozen=True)
class ClientEvent:
    ts_us: int
    name: str
    target: str | None
    detail: dict


@dataclass
class Timeline:
    faults: list[FaultWindow] = field(default_factory=list)
    observations: list[Observation] = field(default_factory=list)
    phases: list[tuple[int, str]] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    clients: list[ClientEvent] = field(default_factory=list)

    def owner(self, seen_us: int | None) -> FaultWindow | None:
        """The fault a thing seen at `seen_us` belongs to (module docstring)."""
        if seen_us is None:
            return None
        owners = [f for f in self.injected
                  if f.start_us <= seen_us <= f.end_us + AFTER_HEAL_US]
        return max(owners, key=lambda f: f.start_us, default=None)

    @property
    def injected(self) -> list[FaultWindow]:
        """The faults that took effect: all but those whose inject failed."""
        return [f for f in self.faults if not f.not_injected]

    def broker_names(self) -> dict[int, str]:
        """Broker id -> node name: the observer's `brokers` event, and its leader events."""
        names = {int(o.leader): str(o.target) for o in self.observations
                 if o.name == "leader" and o.target and isinstance(o.leader, int) and o.leader >= 0}
        for o in self.observations:
            if o.name == "brokers" and isinstance(o.detail.get("brokers"), dict):
                for k, v in o.detail["brokers"].items():
                    if str(k).lstrip("-").isdigit():
                        names[int(k)] = str(v)
        return dict(sorted(names.items()))


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
    heals: dict[str, tuple[int, dict]] = {}
    heal_errors: dict[str, str] = {}
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
            if d.get("heal_error"):      # a heal that failed: the fault stayed in effect
                heal_errors.setdefault(str(fid), str(d["heal_error"]))
                continue
            heals.setdefault(str(fid), (r["ts_us"], d))
        elif kind == "client":
            tl.clients.append(ClientEvent(r["ts_us"], r["name"], r.get("target"), d))
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
        end_us, heal_detail = heals[fid] if healed else (end_default, {})
        inject_s = f["detail"].get("inject_s")
        applied = f["ts_us"] + int(inject_s * 1e6) if isinstance(inject_s, (int, float)) else f["ts_us"]
        tl.faults.append(FaultWindow(
            fault_id=fid, name=f["name"], target=f.get("target"), start_us=f["ts_us"],
            end_us=end_us, healed=healed, applied_us=min(applied, end_us),
            detail=f["detail"], heal_detail=heal_detail, heal_error=heal_errors.get(fid)))
    return tl


def touched_partitions(fault: FaultWindow, tl: Timeline, all_partitions: list[tuple[str, int]],
                       written: list[tuple[str, int]]) -> tuple[list[tuple[str, int]], str]:
    """The partitions a fault touched (the spec): those with a leader or ISR change
    that belongs to it (Timeline.owner); if none, `written` (every partition written
    while it was active). Nothing for a fault that was not injected."""
    if fault.not_injected:
        return [], f"none: not injected ({fault.inject_error})"
    seen = [(o.topic, o.partition) for o in tl.observations
            if o.name in ("leader", "isr") and o.partition is not None
            and fault.start_us <= o.ts_us <= fault.end_us + AFTER_HEAL_US
            and tl.owner(o.ts_us) is fault]
    got = sorted({(t, q) for topic, p in seen for (t, q) in all_partitions
                  if q == p and (topic is None or t == topic)})
    if got:
        return got, "leader/ISR changes observed"
    return sorted(written), "written while the fault was active (no leader/ISR change)"


def controller_failover(fault: FaultWindow, tl: Timeline) -> dict | None:
    """For a fault that stopped or cut off the active controller: the seconds from its
    injection to the first `observe controller` event naming another controller
    (`seconds`, null when none came before the run ended), with the old and the new
    controller's names. None when the fault did not hit the active controller (or
    was not injected)."""
    if fault.not_injected:
        return None
    controllers = sorted((o for o in tl.observations if o.name == "controller"),
                         key=lambda o: o.ts_us)
    before = [o.target for o in controllers if o.ts_us <= fault.start_us]
    old = fault.detail.get("previous_controller") or (before[-1] if before else None)
    if old is None or old not in fault.nodes:
        return None
    new = next((o for o in controllers if o.ts_us > fault.start_us and o.target
                and o.target != old), None)
    return {"previous": old, "new": new.target if new else None,
            "seconds": round((new.ts_us - fault.start_us) / 1e6, 6) if new else None}
