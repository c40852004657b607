"""families.records.isr: ISR shrink and regrowth per fault, one case per clause of its
docstring, and the expectation metrics read from it (isr_shrinks, max_isr_restore_s,
acked_during_faults)."""
from __future__ import annotations

import math

import pytest

from core.timeline import FaultWindow, Observation, Timeline
from families.records.isr import isr_by_fault
from verifiers.verdict import metric_value

S = 1_000_000


def _isr(ts_s: float, isr: list[int], partition: int = 0) -> Observation:
    return Observation(int(ts_s * S), "isr", None, "t", partition, None, tuple(isr),
                       {"replicas": [1, 2, 3]})


def _one(observations, start=10.0, heal=45.0, healed=True, parts=(("t", 0),)) -> dict:
    f = FaultWindow("f0", "pause", "kafka-2", int(start * S), int(heal * S), healed)
    (r,) = isr_by_fault(Timeline(faults=[f], observations=observations), {0: (list(parts), "given")})
    return r


def test_a_shrink_during_the_fault_and_a_full_isr_after_the_heal():
    r = _one([_isr(1, [1, 2, 3]), _isr(19.5, [1, 3]), _isr(47.25, [1, 2, 3])])
    assert r["shrunk_s"] == pytest.approx(9.5)
    assert r["restored_after_heal_s"] == pytest.approx(2.25)
    assert r["partitions"]["t-0"]["smallest"] == 2


def test_short_at_the_injection_is_a_shrink_at_0():
    r = _one([_isr(1, [1, 3]), _isr(50, [1, 2, 3])])
    assert r["shrunk_s"] == 0.0 and r["restored_after_heal_s"] == pytest.approx(5.0)


def test_full_again_before_the_heal_is_restored_at_0():
    r = _one([_isr(1, [1, 2, 3]), _isr(12, [1]), _isr(30, [1, 2, 3])])
    assert r["shrunk_s"] == pytest.approx(2.0) and r["restored_after_heal_s"] == 0.0
    assert r["partitions"]["t-0"]["smallest"] == 1


def test_never_shrunk_has_no_restoration():
    r = _one([_isr(1, [1, 2, 3])])
    assert r["shrunk_s"] is None and r["restored_after_heal_s"] is None


def test_never_full_again_is_null():
    r = _one([_isr(1, [1, 2, 3]), _isr(15, [1, 2])])
    assert r["shrunk_s"] == pytest.approx(5.0) and r["restored_after_heal_s"] is None


def test_a_shrink_after_the_heal_is_not_this_faults():
    r = _one([_isr(1, [1, 2, 3]), _isr(46, [1, 2])])
    assert r["shrunk_s"] is None


def test_the_fault_takes_the_earliest_shrink_and_the_latest_restoration():
    obs = [_isr(1, [1, 2, 3], 0), _isr(1, [1, 2, 3], 1), _isr(12, [1, 2], 0), _isr(20, [1, 2], 1),
           _isr(46, [1, 2, 3], 0), _isr(55, [1, 2, 3], 1)]
    r = _one(obs, parts=(("t", 0), ("t", 1)))
    assert r["shrunk_s"] == pytest.approx(2.0) and r["restored_after_heal_s"] == pytest.approx(10.0)


def _summary(isr: list[dict], windows: list[dict]) -> dict:
    return {"anomalies": {}, "counts": {}, "metrics": {"isr": isr, "fault_windows": windows}}


def test_the_expectation_metrics_read_every_fault():
    isr = [{"name": "pause", "shrunk_s": 9.5, "restored_after_heal_s": 2.25},
           {"name": "kill", "shrunk_s": None, "restored_after_heal_s": None}]
    s = _summary(isr, [{"acked_during": 0}, {"acked_during": 7}])
    assert metric_value(s, "isr_shrinks") == (1, None)
    assert metric_value(s, "max_isr_restore_s") == (2.25, None)
    assert metric_value(s, "acked_during_faults") == (7, None)


def test_an_isr_never_restored_is_infinite_and_says_which_fault():
    s = _summary([{"name": "pause", "shrunk_s": 1.0, "restored_after_heal_s": None}], [])
    value, why = metric_value(s, "max_isr_restore_s")
    assert math.isinf(value) and "pause" in why


def test_a_summary_from_before_these_metrics_is_not_judged():
    value, why = metric_value({"metrics": {"fault_windows": [{}]}}, "acked_during_faults")
    assert value is None and "acked_during" in why
    assert metric_value({"metrics": {}}, "isr_shrinks")[0] is None


def test_a_fault_is_wholly_in_effect_from_the_end_of_its_inject():
    from core.timeline import parse_events
    rows = [{"ts_us": 10 * S, "kind": "fault", "name": "kill", "target": "kafka-1,kafka-3",
             "detail": '{"fault_id": "k", "inject_s": 0.25}'},
            {"ts_us": 20 * S, "kind": "fault", "name": "pause", "target": "kafka-2",
             "detail": '{"fault_id": "p"}'},
            {"ts_us": 40 * S, "kind": "heal", "name": "kill", "target": None,
             "detail": '{"fault_id": "k"}'}]
    kill, pause = parse_events(rows, run_end_us=50 * S).faults
    assert kill.applied_us == 10 * S + 250_000
    assert pause.applied_us == pause.start_us          # a row without inject_s (older runs)


def test_the_end_table_shows_each_faults_isr_beside_its_recovery():
    from harness.run.end_table import recovery_rows
    from spark_reports.summary import Summary
    summary = {"metrics": {
        "recovery": [{"name": "pause", "fault_id": "p", "seconds": 9.5, "after_heal_s": 0.0,
                      "unavailable_s": 9.1},
                     {"name": "kill", "fault_id": "k", "seconds": 0.0, "after_heal_s": 0.0,
                      "unavailable_s": 0.0}],
        "isr": [{"fault_id": "p", "shrunk_s": 9.102, "restored_after_heal_s": None},
                {"fault_id": "k", "shrunk_s": None, "restored_after_heal_s": None}]}}
    pause, kill = recovery_rows(Summary.from_dict(summary))
    assert pause[-2:] == ["9.1 s", "never"] and kill[-2:] == ["-", "-"]
