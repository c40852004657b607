"""metrics.recovery and timeline.touched_partitions: one case per clause of the spec's
recovery definition (windows are given; how they are found is tested on the
casebook, tests/unit/spark/test_reconcile_cases.py)."""
from __future__ import annotations

import pytest

from spark_reports.metrics import AFTER_HEAL_US, recovery
from spark_reports.timeline import FaultWindow, Observation, Timeline, touched_partitions

S = 1_000_000
PARTS = [("t", 0), ("t", 1)]


def _fault(start_s: float, heal_s: float, healed: bool = True) -> FaultWindow:
    return FaultWindow("f0", "partition", "kafka-1", int(start_s * S), int(heal_s * S), healed)


def _window(p: int, a: float, b: float, ended: bool = True) -> dict:
    return {"topic": "t", "partition": p, "start_us": int(a * S), "end_us": int(b * S),
            "seconds": b - a, "ended_by_ack": ended}


def _one(windows, fault=None, parts=(("t", 0),)) -> dict:
    f = fault or _fault(10, 35)
    (r,) = recovery(Timeline(faults=[f]), {0: (list(parts), "given")}, windows)
    return r


def test_recovery_is_the_end_of_the_last_window_minus_the_injection():
    # the leader cut off for 25 s: acks stop just before the injection (the window
    # is open at it), resume 28.8 s after it; in-flight acks do not end recovery
    r = _one([_window(0, 9.99, 38.8)])
    assert r["seconds"] == pytest.approx(28.8)
    assert r["after_heal_s"] == pytest.approx(3.8)
    assert r["unavailable_s"] == pytest.approx(28.81)


def test_no_window_is_recovery_0():
    r = _one([])
    assert (r["seconds"], r["after_heal_s"], r["unavailable_s"]) == (0.0, 0.0, 0.0)


def test_the_last_of_several_windows_counts_and_their_seconds_add_up():
    r = _one([_window(0, 12, 14), _window(0, 36, 40)])
    assert r["seconds"] == pytest.approx(30.0)
    assert r["unavailable_s"] == pytest.approx(6.0)


def test_windows_beginning_more_than_10_s_after_the_heal_or_ending_before_the_injection_do_not_count():
    late = 35 + AFTER_HEAL_US / S + 1
    r = _one([_window(0, 2, 5), _window(0, 44, 44.5), _window(0, late, late + 5)])
    assert r["seconds"] == pytest.approx(34.5)         # the window at 44 s still counts


def test_after_heal_is_not_below_0():
    r = _one([_window(0, 12, 14)])
    assert r["after_heal_s"] == 0.0


def test_a_window_still_open_when_sends_end_is_never_recovered():
    r = _one([_window(0, 12, 14), _window(0, 20, 60, ended=False)])
    assert r["seconds"] is None and r["never_recovered"] == ["t-0"]
    assert r["partitions"]["t-0"] is None


def test_a_faults_recovery_is_the_largest_over_its_partitions():
    r = _one([_window(0, 12, 14), _window(1, 11, 20)], parts=PARTS)
    assert r["partitions"]["t-0"]["seconds"] == pytest.approx(4.0)
    assert r["seconds"] == pytest.approx(10.0)


def test_a_fault_never_healed_has_no_after_heal():
    r = _one([_window(0, 12, 14)], fault=_fault(10, 50, healed=False))
    assert r["seconds"] == pytest.approx(4.0) and r["after_heal_s"] is None


def _obs(ts_s: float, p: int, name: str = "leader") -> Observation:
    return Observation(int(ts_s * S), name, None, "t", p, 2, None, {})


def test_touched_are_the_partitions_whose_leader_or_isr_changed_until_10_s_after_the_heal():
    tl = Timeline(observations=[_obs(5, 0), _obs(12, 1, "isr"), _obs(44, 0),
                                _obs(20, 0, "controller")])
    f = _fault(10, 35)
    assert touched_partitions(f, tl, PARTS, [], AFTER_HEAL_US)[0] == [("t", 0), ("t", 1)]
    tl = Timeline(observations=[_obs(5, 0), _obs(46, 1)])      # before, and too late
    parts, why = touched_partitions(f, tl, PARTS, [("t", 1)], AFTER_HEAL_US)
    assert parts == [("t", 1)] and why.startswith("written while")
