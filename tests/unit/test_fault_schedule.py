import threading

import pytest
from test_fault_fakes import FakeCluster

from core.errors import SpecError
from core.history import EventLog, read_table
from faults.base import BaseFault, FaultContext
from faults.healall import heal_all_on_exit
from faults.schedule import HEAL, INJECT, ScheduleSpec, build_schedule, run_schedule

SPEC = ScheduleSpec(kinds=("kill-leader", "partition-halves", "pause-leader", "disk-full-leader"),
                    duration_s=600, initial_quiet_s=5, fault_min_s=5, fault_max_s=30,
                    recovery_min_s=10, recovery_max_s=40)


def test_same_seed_same_timeline():
    assert build_schedule(42, SPEC) == build_schedule(42, SPEC)
    assert build_schedule(42, SPEC).to_dict() == build_schedule(42, SPEC).to_dict()


def test_different_seeds_differ():
    timelines = {tuple(build_schedule(seed, SPEC).steps) for seed in range(20)}
    assert len(timelines) == 20


def test_timeline_shape():
    s = build_schedule(7, SPEC)
    assert s.steps, "a 600 s schedule must hold some faults"
    assert s.steps[0].at_s == SPEC.initial_quiet_s
    for inject, heal in zip(s.steps[::2], s.steps[1::2], strict=True):
        assert (inject.action, heal.action) == (INJECT, HEAL)
        assert inject.slot == heal.slot and inject.kind == heal.kind
        assert SPEC.fault_min_s <= heal.at_s - inject.at_s <= SPEC.fault_max_s + 1e-3
        assert heal.at_s <= SPEC.duration_s
    # fault-free recovery between one heal and the next inject
    heals, injects = s.steps[1::2], s.steps[2::2]
    for heal, nxt in zip(heals[:len(injects)], injects, strict=True):
        assert SPEC.recovery_min_s - 1e-3 <= nxt.at_s - heal.at_s <= SPEC.recovery_max_s + 1e-3
    assert {st.kind for st in s.steps} <= set(SPEC.kinds)


def test_bad_spec_names_the_field():
    with pytest.raises(SpecError, match="nemesis.kinds"):
        ScheduleSpec(kinds=())
    with pytest.raises(SpecError, match="nemesis.fault_min_s"):
        ScheduleSpec(kinds=("x",), fault_min_s=10, fault_max_s=5)
    with pytest.raises(SpecError, match="nemesis.recovery_min_s"):
        ScheduleSpec(kinds=("x",), recovery_min_s=10, recovery_max_s=1)


class Recording(BaseFault):
    def __init__(self, kind, log, fail_inject=False):
        super().__init__()
        self.name, self.log, self.fail_inject = kind, log, fail_inject

    def _inject(self, ctx):
        self.log.append(("inject", self.name))
        if self.fail_inject:
            raise RuntimeError("boom")

    def _heal(self, ctx):
        self.log.append(("heal", self.name))


def test_run_schedule_plays_steps_in_order_and_records_events(tmp_path):
    spec = ScheduleSpec(kinds=("a", "b"), duration_s=0.5, initial_quiet_s=0.01, fault_min_s=0.01,
                        fault_max_s=0.03, recovery_min_s=0.01, recovery_max_s=0.02)
    schedule = build_schedule(3, spec)
    calls = []
    events = EventLog(tmp_path, "r1")
    ctx = FaultContext(cluster=None, events=events)
    faults = run_schedule(ctx, schedule, lambda kind, ctx: Recording(kind, calls,
                                                                     fail_inject=kind == "b"))
    events.close()
    expected = [(s.action, s.kind) for s in schedule.steps]
    assert calls == expected
    assert not ctx.active, "every injected fault, even a failed one, was healed at its step"
    rows = read_table(tmp_path, "events").to_pylist()
    assert rows[0]["name"] == "nemesis-schedule"
    assert sum(r["kind"] == "fault" for r in rows) == len(faults)
    assert sum(r["kind"] == "heal" for r in rows) == len(faults)


def test_interrupted_schedule_is_healed_by_heal_all(tmp_path):
    spec = ScheduleSpec(kinds=("a",), duration_s=100, initial_quiet_s=0.0, fault_min_s=50,
                        fault_max_s=50, recovery_min_s=1, recovery_max_s=1)
    calls = []
    stop = threading.Event()
    ctx = FaultContext(cluster=FakeCluster(tmp_path), events=EventLog(tmp_path, "r1"))

    def make(kind, ctx):
        stop.set()                # the run is stopped right after the first inject
        return Recording(kind, calls)
    with heal_all_on_exit(ctx):
        run_schedule(ctx, build_schedule(1, spec), make, stop=stop)
    assert calls == [("inject", "a"), ("heal", "a")]
    assert ctx.heal_all_runs == 1


def test_every_kind_comes_once_before_any_comes_twice():
    spec = ScheduleSpec(kinds=tuple(f"k{i}" for i in range(7)), duration_s=10_000,
                        fault_min_s=1, fault_max_s=2, recovery_min_s=1, recovery_max_s=2)
    kinds = [st.kind for st in build_schedule(3, spec).steps if st.action == INJECT]
    for start in range(0, len(kinds) - 7, 7):
        assert sorted(kinds[start:start + 7]) == sorted(spec.kinds), kinds[start:start + 7]


def test_a_self_healing_fault_that_failed_half_way_is_healed_at_once(tmp_path):
    from harness.run.fault_timeline import FaultTimeline, PlannedFault
    calls = []
    ctx = FaultContext(cluster=None, events=EventLog(tmp_path, "r1"))
    ok = PlannedFault("ok", 0.0, None, lambda: Recording("ok", calls), self_healing=True)
    failed = PlannedFault("failed", 0.0, None, lambda: Recording("failed", calls, fail_inject=True),
                          self_healing=True)
    timeline = FaultTimeline(ctx, [ok, failed]).start()
    assert timeline.wait(10)
    ctx.events.close()
    assert ("heal", "failed") in calls and ("heal", "ok") not in calls
    assert failed.healed_s is not None and failed.error.startswith("inject: RuntimeError")
    assert ok.healed_s == ok.inject_done_s
    assert failed.fault.fault_id not in ctx.active
