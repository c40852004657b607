"""metrics.recovery and timeline.touched_partitions: one case per clause of the spec's
recovery definition (windows are given; how they are found is tested on the
casebook, tests/unit/spark/test_reconcile_cases.py)."""
from __future__ import annotations

import pytest

from core.timeline import AFTER_HEAL_US, FaultWindow, Observation, Timeline, touched_partitions
from families.records.availability import recovery

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
    f = _fault(10, 35)
    tl = Timeline(faults=[f], observations=[_obs(5, 0), _obs(12, 1, "isr"), _obs(44, 0),
                                            _obs(20, 0, "controller")])
    assert touched_partitions(f, tl, PARTS, [])[0] == [("t", 0), ("t", 1)]
    tl = Timeline(faults=[f], observations=[_obs(5, 0), _obs(46, 1)])      # before, and too late
    parts, why = touched_partitions(f, tl, PARTS, [("t", 1)])
    assert parts == [("t", 1)] and why.startswith("written while")


# -- which fault a window belongs to (the history spec: seen at start + threshold; among
# the faults injected by then and healed no more than 10 s before, the last injected)

def _f(fid: str, start_s: float, heal_s: float, healed: bool = True, **detail) -> FaultWindow:
    return FaultWindow(fid, fid.split("-")[0], "kafka-1", int(start_s * S), int(heal_s * S),
                       healed, detail=detail)


def _by_id(tl: Timeline, windows: list[dict]) -> dict[str, dict]:
    touched = {i: ([("t", 0)], "given") for i in range(len(tl.faults))}
    return {r["fault_id"]: r for r in recovery(tl, touched, windows)}


def test_each_fault_is_charged_only_its_own_windows_when_faults_follow_each_other():
    # the run: a controller failover (no window), a pause, a disk fill, a bounce;
    # the old rule charged each fault with the next fault's windows
    tl = Timeline(faults=[_f("controller-a", 5, 6.4), _f("pause-b", 18, 26),
                          _f("disk-c", 36, 44), _f("bounce-d", 55, 57)])
    r = _by_id(tl, [_window(0, 18.2, 30.6), _window(0, 36.5, 41.0), _window(0, 55.1, 62.0)])
    assert r["controller-a"]["no_partition_unavailable"] and r["controller-a"]["seconds"] == 0.0
    assert r["pause-b"]["seconds"] == pytest.approx(12.6)
    assert r["pause-b"]["unavailable_s"] == pytest.approx(12.4)
    assert r["disk-c"]["seconds"] == pytest.approx(5.0)
    assert r["bounce-d"]["seconds"] == pytest.approx(7.0)
    assert [x["windows"] for x in r.values()] == [0, 1, 1, 1]


def test_overlapping_faults_a_window_seen_after_the_later_injection_is_the_later_faults():
    # the earlier fault is still active when the later one is injected
    tl = Timeline(faults=[_f("kill-a", 10, 40), _f("partition-b", 20, 30)])
    r = _by_id(tl, [_window(0, 12, 15), _window(0, 19.5, 25)])
    assert r["kill-a"]["seconds"] == pytest.approx(5.0)             # only 12..15
    assert r["partition-b"]["seconds"] == pytest.approx(5.0)        # 19.5..25, seen at 20.5
    assert r["partition-b"]["after_heal_s"] == 0.0


def test_a_window_more_than_10_s_after_a_heal_belongs_to_no_fault():
    tl = Timeline(faults=[_f("kill-a", 10, 20)])
    from families.records.availability import window_owner
    late, near = _window(0, 30.5, 33), _window(0, 28, 29.5)
    assert window_owner(tl, late, S) == "none"                      # seen at 31.5 > 20 + 10
    assert window_owner(tl, near, S) == "kill-a"                    # seen at 29 <= 30
    assert _by_id(tl, [late])["kill-a"]["no_partition_unavailable"]


def test_a_window_still_open_is_never_recovered_only_for_the_fault_it_belongs_to():
    tl = Timeline(faults=[_f("kill-a", 10, 20), _f("pause-b", 40, 50)])
    r = _by_id(tl, [_window(0, 12, 14), _window(0, 45, 70, ended=False)])
    assert r["kill-a"]["seconds"] == pytest.approx(4.0)
    assert r["pause-b"]["seconds"] is None and r["pause-b"]["never_recovered"] == ["t-0"]


def test_a_controller_fault_reports_its_failover_beside_its_recovery():
    f = _f("controller-a", 5, 12, previous_controller="kafka-1")
    ctl = [Observation(int(t * S), "controller", n, None, None, None, None, {})
           for t, n in ((1, "kafka-1"), (5.3, None), (6.4, "kafka-2"))]
    r = recovery(Timeline(faults=[f], observations=ctl), {0: ([("t", 0)], "given")}, [])[0]
    assert r["controller_failover_s"] == pytest.approx(1.4)
    assert r["controller"] == {"previous": "kafka-1", "new": "kafka-2", "seconds": pytest.approx(1.4)}
    assert r["no_partition_unavailable"]
    other = _f("kill-b", 5, 12)
    other = FaultWindow("kill-b", "kill", "kafka-3", other.start_us, other.end_us, True)
    r = recovery(Timeline(faults=[other], observations=ctl), {0: ([("t", 0)], "given")}, [])[0]
    assert r["controller_failover_s"] is None          # it did not hit the controller
