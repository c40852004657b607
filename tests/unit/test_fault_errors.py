"""A fault that could not be injected or healed: it owns no window and no change, its
story says what failed, and the verdict counts it (fault_errors == 0 by default).

The case is the one a new user met: kafka-2 killed for 25 s and, 5 s later, paused;
the pause failed (the container was not running), and the ISR shrink the kill caused
was charged to the pause, the fault "injected last"."""
from __future__ import annotations

import json

from core.timeline import parse_events, touched_partitions
from families.records.availability import recovery, window_owner
from families.records.isr import isr_by_fault
from harness.run.end_table import recovery_rows
from spark_reports.explain import RunFacts, fault_story
from spark_reports.problems import fault_errors, find_problems, summarize_fault_errors
from spark_reports.storage import RunLocation
from spark_reports.summary import Summary
from verifiers.expectations import load_expectations
from verifiers.verdict import judge

S = 1_000_000
T0 = 1_700_000_000_000_000
NOT_RUNNING = "FaultError: kafka-2 is not running (its container is exited): there is nothing to pause"


def _row(kind: str, name: str, at_s: float, target: str | None = None, **detail) -> dict:
    return {"ts_us": T0 + int(at_s * S), "kind": kind, "name": name, "target": target,
            "detail": json.dumps(detail)}


def _isr(at_s: float, isr: list[int]) -> dict:
    return _row("observe", "isr", at_s, topic="t", partition=0, isr=isr, replicas=[1, 2, 3])


def kill_then_pause(pause_heal: dict | None = None) -> list[dict]:
    """kafka-2 killed at 0 s, healed at 25 s; its pause at 5 s failed, healed at 15 s;
    the ISR of t-0 shrinks at 8 s (the kill's doing) and is full again at 30 s."""
    return [
        _row("fault", "kill", 0, "kafka-2", fault_id="kill-1", label="timeline[0] kill",
             description="kafka-2 killed (SIGKILL)"),
        _row("fault", "pause", 5, "kafka-2", fault_id="pause-1", label="timeline[1] pause",
             description="kafka-2 paused (docker): alive but silent", inject_error=NOT_RUNNING),
        _isr(8, [1, 3]),
        _row("heal", "pause", 15, "kafka-2", fault_id="pause-1", **(pause_heal or {})),
        _row("heal", "kill", 25, "kafka-2", fault_id="kill-1"),
        _isr(30, [1, 2, 3]),
    ]


def test_the_shrink_the_kill_caused_is_the_kills_not_the_failed_pauses():
    tl = parse_events(kill_then_pause(), T0 + 60 * S)
    kill, pause = tl.faults
    assert pause.not_injected and not kill.not_injected
    # before: the pause, injected last, took the shrink at 8 s
    assert tl.owner(T0 + 8 * S) is kill
    assert tl.owner(T0 + 16 * S) is kill      # after the pause's "heal" too
    assert tl.injected == [kill]
    parts = [("t", 0), ("t", 1)]
    assert touched_partitions(kill, tl, parts, [])[0] == [("t", 0)]
    # not even the partitions written while it "was active"
    assert touched_partitions(pause, tl, parts, parts) == (
        [], f"none: not injected ({NOT_RUNNING})")
    [isr_kill, isr_pause] = isr_by_fault(tl, {0: ([("t", 0)], "seen"), 1: ([], "none")})
    assert isr_kill["shrunk_s"] == 8.0 and isr_pause["shrunk_s"] is None


def test_a_window_during_the_failed_pause_is_the_kills():
    tl = parse_events(kill_then_pause(), T0 + 60 * S)
    window = {"topic": "t", "partition": 0, "start_us": T0 + 6 * S, "end_us": T0 + 9 * S,
              "seconds": 3.0, "ended_by_ack": True}
    assert window_owner(tl, window, S) == "kill-1"
    touched = {0: ([("t", 0)], "seen"), 1: ([], "none")}
    kill, pause = recovery(tl, touched, [window], S)
    assert kill["seconds"] == 9.0 and kill["windows"] == 1
    assert pause["inject_error"] == NOT_RUNNING and pause["windows"] == 0
    assert pause["partitions"] == {} and pause["controller"] is None


def test_the_fault_table_and_the_story_say_what_failed_not_what_it_would_have_done():
    tl = parse_events(kill_then_pause(), T0 + 60 * S)
    touched = {0: ([("t", 0)], "seen"), 1: ([], "none")}
    rec = recovery(tl, touched, [], S)
    summary = {"metrics": {"recovery": rec, "isr": isr_by_fault(tl, touched)}}
    _, pause_row = recovery_rows(Summary.from_dict(summary))
    assert pause_row[0] == "timeline[1] pause"
    assert pause_row[1] == f"not injected: {NOT_RUNNING}"
    assert "alive but silent" not in " ".join(pause_row)
    story = fault_story(rec[1], None, Summary.from_dict(summary), RunFacts(T0))
    text = " ".join(s for _, s in story)
    assert f"could not be injected: {NOT_RUNNING}" in text
    assert "alive but silent" not in text and "injected: kafka-2 paused" not in text


def test_a_failed_heal_row_is_not_the_heal():
    rows = kill_then_pause()
    rows.insert(4, _row("heal", "kill", 25, "kafka-2", fault_id="kill-1",
                        heal_error="FaultError: kafka-2 exited at every start"))
    rows[-2] = _row("heal", "kill", 40, "kafka-2", fault_id="kill-1")     # heal-all's
    tl = parse_events(rows, T0 + 60 * S)
    kill = tl.faults[0]
    assert kill.healed and kill.end_us == T0 + 40 * S
    assert kill.heal_error == "FaultError: kafka-2 exited at every start"


def _loc(tmp_path, planned: list[dict] | None = None) -> RunLocation:
    if planned is not None:
        (tmp_path / "faults.json").write_text(json.dumps(planned))
    return RunLocation.of(str(tmp_path))


def test_fault_errors_count_each_fault_once(tmp_path):
    rows = kill_then_pause(pause_heal={"heal_error": "APIError: 409"})      # both failed
    rows.append(_row("heal", "pause", 50, "kafka-2", fault_id="pause-1"))
    planned = [{"label": "timeline[1] pause", "fault_id": "pause-1", "injected_s": 5.0,
                "error": f"inject: {NOT_RUNNING}; heal: APIError: 409"}]
    tl = parse_events(rows, T0 + 60 * S)
    [err] = fault_errors(tl, _loc(tmp_path, planned))
    assert (err["fault_id"], err["inject_error"], err["heal_error"]) == (
        "pause-1", NOT_RUNNING, "APIError: 409")
    problems = find_problems(tl, _loc(tmp_path))
    assert [p["kind"] for p in problems].count("fault-error") == 1


def test_a_fault_healed_late_but_injected_fine_is_not_an_error(tmp_path):
    # the kill's heal (a supervised start) held 13 s after its planned time: late, no error
    rows = [r for r in kill_then_pause() if "pause" not in r["name"]]
    rows[-2] = _row("heal", "kill", 38, "kafka-2", fault_id="kill-1")
    planned = [{"label": "timeline[0] kill", "fault_id": "kill-1", "injected_s": 0.0,
                "planned_at_s": 0.0, "slip_s": 0.0, "error": None}]
    tl = parse_events(rows, T0 + 60 * S)
    assert fault_errors(tl, _loc(tmp_path, planned)) == []


def test_heal_errors_of_runs_from_before_heal_error_rows_are_read_from_faults_json(tmp_path):
    rows = [r for r in kill_then_pause() if "pause" not in r["name"]]
    planned = [{"label": "timeline[0] kill", "fault_id": "kill-1", "injected_s": 0.0,
                "error": "heal: FaultError: kafka-2 exited at every start"}]
    [err] = fault_errors(parse_events(rows, T0 + 60 * S), _loc(tmp_path, planned))
    assert err["heal_error"] == "FaultError: kafka-2 exited at every start"
    assert err["inject_error"] is None and err["healed"]


def test_a_fault_never_healed_and_one_that_failed_before_its_row_are_errors(tmp_path):
    rows = [r for r in kill_then_pause() if not (r["kind"] == "heal" and r["name"] == "kill")]
    planned = [{"label": "nemesis[0] kill-leader", "fault_id": None, "injected_s": 3.0,
                "error": "inject: SelectorError: t-0 has no leader"}]
    errors = fault_errors(parse_events(rows, T0 + 60 * S), _loc(tmp_path, planned))
    assert [(e["label"], e["healed"]) for e in errors] == [
        ("timeline[0] kill", False), ("timeline[1] pause", True),
        ("nemesis[0] kill-leader", False)]


def test_the_verdict_fails_on_a_fault_error_unless_the_scenario_names_the_count(tmp_path):
    tl = parse_events(kill_then_pause(), T0 + 60 * S)
    summary = {"anomalies": {"lost": 0}, "counts": {"workload_deaths": 0, "load_shortfall": 0}}
    summarize_fault_errors(summary, tl, _loc(tmp_path))
    assert summary["counts"]["fault_errors"] == 1
    v = judge(summary, load_expectations("- lost == 0\n", "e"), {}, {})
    assert v.status == "failed"
    assert v.failures == (f"fault_errors: 1 > 0 (timeline[1] pause could not be injected: "
                          f"{NOT_RUNNING})",)
    # a scenario that expects one of its faults to fail says so
    v = judge(summary, load_expectations("- lost == 0\n- fault_errors <= 1\n", "e"), {}, {})
    assert v.status == "passed"
    assert [c.expectation for c in v.checks].count("fault_errors <= 1") == 1
    assert "fault_errors == 0" not in [c.expectation for c in v.checks]
