"""The nemesis schedule: a timeline of inject/heal steps built from a seed.

The timeline is data (same seed and spec, same steps), built before the run
and written into the run's events; `run_schedule` plays it against a cluster.
Between faults there is a fault-free recovery period, so every fault's
effect and recovery can be told apart in the history.
"""
from __future__ import annotations

import logging
import random
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

from core.errors import SpecError
from faults.base import Fault, FaultContext

log = logging.getLogger(__name__)

INJECT = "inject"
HEAL = "heal"


@dataclass(frozen=True)
class ScheduleSpec:
    kinds: tuple[str, ...]                 # fault kinds to draw from (names in a catalog)
    duration_s: float = 300.0              # no fault is healed later than this
    initial_quiet_s: float = 10.0          # fault-free warm-up
    fault_min_s: float = 5.0               # how long a fault stays injected
    fault_max_s: float = 20.0
    recovery_min_s: float = 10.0           # fault-free period after each heal
    recovery_max_s: float = 30.0

    def __post_init__(self) -> None:
        if not self.kinds:
            raise SpecError("nemesis.kinds", "is empty", "name at least one fault kind")
        for name in ("duration_s", "initial_quiet_s", "fault_min_s", "fault_max_s",
                     "recovery_min_s", "recovery_max_s"):
            if getattr(self, name) < 0:
                raise SpecError(f"nemesis.{name}", f"{getattr(self, name)} is negative",
                                "use 0 or more seconds")
        if self.fault_min_s > self.fault_max_s:
            raise SpecError("nemesis.fault_min_s", f"{self.fault_min_s} > fault_max_s "
                            f"{self.fault_max_s}", "make fault_min_s <= fault_max_s")
        if self.recovery_min_s > self.recovery_max_s:
            raise SpecError("nemesis.recovery_min_s", f"{self.recovery_min_s} > recovery_max_s "
                            f"{self.recovery_max_s}", "make recovery_min_s <= recovery_max_s")


@dataclass(frozen=True)
class Step:
    at_s: float        # seconds after the schedule starts
    action: str        # INJECT or HEAL
    kind: str
    slot: int          # pairs an inject with its heal


@dataclass(frozen=True)
class Schedule:
    seed: int
    spec: ScheduleSpec
    steps: tuple[Step, ...]

    def to_dict(self) -> dict:
        return {"seed": self.seed,
                "steps": [[s.at_s, s.action, s.kind, s.slot] for s in self.steps]}


def build_schedule(seed: int, spec: ScheduleSpec) -> Schedule:
    """One fault at a time: quiet, inject, hold, heal, recover, repeat, as
    long as the heal still falls within `duration_s`. Kinds are drawn from a
    shuffled bag, refilled when empty: every kind comes once before any comes
    twice, so a schedule long enough for N faults mixes all N kinds."""
    rng = random.Random(f"nemesis-{seed}")   # string seeds hash stably across processes
    steps: list[Step] = []
    t, slot, bag = spec.initial_quiet_s, 0, []
    while True:
        if not bag:
            bag = rng.sample(spec.kinds, len(spec.kinds))
        kind = bag.pop()
        hold = round(rng.uniform(spec.fault_min_s, spec.fault_max_s), 3)
        if t + hold > spec.duration_s:
            break
        steps += [Step(round(t, 3), INJECT, kind, slot), Step(round(t + hold, 3), HEAL, kind, slot)]
        t += hold + rng.uniform(spec.recovery_min_s, spec.recovery_max_s)
        slot += 1
    return Schedule(seed, spec, tuple(steps))


FaultFactory = Callable[[str, FaultContext], Fault]


def run_schedule(ctx: FaultContext, schedule: Schedule, make_fault: FaultFactory,
                 stop: threading.Event | None = None,
                 clock: Callable[[], float] = time.monotonic) -> list[Fault]:
    """Play the timeline. Returns the faults injected. A fault whose inject
    fails is logged and healed at its heal step like any other; the caller
    wraps this in `heal_all_on_exit` so an interruption leaves nothing behind."""
    stop = stop or threading.Event()
    ctx.emit("phase", "nemesis-schedule", None, **schedule.to_dict())
    start = clock()
    live: dict[int, Fault] = {}
    done: list[Fault] = []
    for step in schedule.steps:
        if stop.wait(max(0.0, start + step.at_s - clock())):
            break
        if step.action == INJECT:
            fault = make_fault(step.kind, ctx)
            live[step.slot] = fault
            done.append(fault)
            try:
                fault.inject(ctx)
            except Exception:  # noqa: BLE001 - a failed inject must not end the run
                log.exception("inject %s (slot %d) failed", step.kind, step.slot)
        else:
            fault = live.pop(step.slot, None)
            if fault is not None:
                try:
                    fault.heal(ctx)
                except Exception:  # noqa: BLE001 - heal-all retries it
                    log.exception("heal %s (slot %d) failed", step.kind, step.slot)
    return done
