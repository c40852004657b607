"""The faults phase: each planned fault on a timer of its own.

A fault is injected at `at` seconds after the phase starts and healed at
`at + hold`, both measured from the phase start, not from the end of the
inject: a fault that blocks (a ZooKeeper session expiry holds ~20 s, a rolling
restart minutes) delays neither the faults after it nor its own heal. What
happened is recorded beside what was planned (`slip_s`), and the history's
fault/heal rows carry the times things really happened.

The scenario's explicit timeline and its seeded nemesis both become
`PlannedFault`s here; a fault without a hold stays until heal-all.
"""
from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from faults.base import BaseFault, FaultContext
from faults.catalog import KINDS, make_fault, preset
from faults.schedule import HEAL, INJECT, build_schedule

log = logging.getLogger(__name__)


@dataclass
class PlannedFault:
    label: str                        # "timeline[0] kill", "nemesis[3] kill-leader"
    at_s: float
    hold_s: float | None
    make: Callable[[], BaseFault]
    self_healing: bool = False
    # What happened, filled in as it does.
    fault: BaseFault | None = None
    injected_s: float | None = None   # when inject started, after the phase start
    inject_done_s: float | None = None
    healed_s: float | None = None
    error: str | None = None

    @property
    def slip_s(self) -> float | None:
        return None if self.injected_s is None else round(self.injected_s - self.at_s, 3)

    def to_dict(self) -> dict[str, Any]:
        return {"label": self.label, "fault_id": self.fault.fault_id if self.fault else None,
                "planned_at_s": self.at_s, "planned_hold_s": self.hold_s,
                "injected_s": self.injected_s, "inject_done_s": self.inject_done_s,
                "healed_s": self.healed_s, "slip_s": self.slip_s, "error": self.error,
                "targets": [n.name for n in self.fault.targets] if self.fault else [],
                # what the fault said about itself (an upgrade's per-node settle times …)
                "detail": dict(self.fault.detail) if self.fault else {}}


def plan_faults(scenario, seed: int) -> list[PlannedFault]:
    plan = []
    for i, entry in enumerate(scenario.faults.timeline):
        plan.append(PlannedFault(f"timeline[{i}] {entry.fault}", entry.at, entry.hold,
                                 entry.resolved.build,
                                 self_healing=entry.resolved.kind.self_healing))
    if scenario.faults.nemesis is not None:
        plan += _nemesis_plan(scenario.faults.nemesis, seed)
    return sorted(plan, key=lambda p: p.at_s)


def _nemesis_plan(nemesis, seed: int) -> list[PlannedFault]:
    schedule = build_schedule(seed, nemesis.schedule)
    injects = {s.slot: s for s in schedule.steps if s.action == INJECT}
    heals = {s.slot: s for s in schedule.steps if s.action == HEAL}
    plan = []
    for slot, step in sorted(injects.items()):
        kind, target, params = preset(step.kind, nemesis.topic, nemesis.partition)
        hold = heals[slot].at_s - step.at_s if slot in heals else None
        plan.append(PlannedFault(
            f"nemesis[{slot}] {step.kind}", step.at_s, hold,
            lambda k=kind, t=target, p=params, s=slot: make_fault(k, t, p, f"nemesis[{s}]"),
            self_healing=KINDS[kind].self_healing))
    return plan


@dataclass
class FaultTimeline:
    ctx: FaultContext
    plan: list[PlannedFault]
    stop: threading.Event = field(default_factory=threading.Event)
    started: float | None = None
    _threads: list[threading.Thread] = field(default_factory=list)

    def start(self) -> "FaultTimeline":
        self.started = time.monotonic()
        for p in self.plan:
            t = threading.Thread(target=self._play, args=(p,), name=f"fault {p.label}", daemon=True)
            t.start()
            self._threads.append(t)
        return self

    def elapsed(self) -> float:
        return 0.0 if self.started is None else time.monotonic() - self.started

    def _wait_until(self, offset_s: float) -> bool:
        """Sleep until `offset_s` after the start; False when told to stop first."""
        assert self.started is not None
        return not self.stop.wait(max(0.0, self.started + offset_s - time.monotonic()))

    def _play(self, p: PlannedFault) -> None:
        if not self._wait_until(p.at_s):
            return
        p.injected_s = round(self.elapsed(), 3)
        try:
            p.fault = p.make()
            p.fault.label = p.label
            p.fault.inject(self.ctx)
        except Exception as e:  # noqa: BLE001 - one failed fault must not end the run
            p.error = f"inject: {type(e).__name__}: {e}"
            log.warning("%s: %s", p.label, p.error)
        p.inject_done_s = round(self.elapsed(), 3)
        if p.fault is None:
            return
        if p.self_healing:
            if p.error is None:
                p.healed_s = p.inject_done_s
            else:       # it stopped half-way (a bounce with its node down): restore now,
                self._heal(p)       # not at the run's end (its window would span the run)
            return
        if p.hold_s is None or not self._wait_until(p.at_s + p.hold_s):
            return                                     # heal-all heals it
        self._heal(p)

    def _heal(self, p: PlannedFault) -> None:
        try:
            p.fault.heal(self.ctx)
            p.healed_s = round(self.elapsed(), 3)
        except Exception as e:  # noqa: BLE001 - heal-all retries it
            p.error = f"{p.error}; " if p.error else ""
            p.error += f"heal: {type(e).__name__}: {e}"
            log.warning("%s: %s", p.label, p.error)

    def wait(self, timeout_s: float | None = None) -> bool:
        """Wait for every timer to finish; True if they all did."""
        deadline = None if timeout_s is None else time.monotonic() + timeout_s
        for t in self._threads:
            t.join(None if deadline is None else max(0.0, deadline - time.monotonic()))
        return not any(t.is_alive() for t in self._threads)

    def active(self) -> list[BaseFault]:
        with self.ctx._lock:
            return list(self.ctx.active.values())

    def finish(self, join_s: float = 60.0) -> None:
        """Stop the timers that have not fired; give blocking injects time to return."""
        self.stop.set()
        self.wait(join_s)
