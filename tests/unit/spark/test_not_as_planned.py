"""Whole verifies of a run that did not do what it planned: a pause that could not be
injected (kafka-2 was down, killed 5 s before) and a producer that sent 2 % of its
plan. Judged as `harness verify RUN_DIR` judges a stored run (its scenario.yaml read
into the model): FAILED on fault_errors and load_shortfall; the kill keeps what it
caused. A look-alike (every fault injected, a producer stalled but caught up) passes."""
from __future__ import annotations

import json
from dataclasses import replace

import pytest
from histories import T0, History

from harness.run.judge import stored_judgement, verify_stored_run
from verifiers.judgement import Judgement
from verifiers.verify import verify_run

pytestmark = pytest.mark.spark

S = 1_000_000
SCENARIO = """\
name: kill-then-pause
cluster: {mode: kraft-combined, version: "3.9", brokers: 3}
topics: [{name: t, partitions: 1, replication_factor: 3, configs: {min.insync.replicas: 2}}]
workload:
  duration_s: 10
  producers: [{name: p0, topic: t, rate: 100}]
"""
NOT_RUNNING = "FaultError: kafka-2 is not running (its container is exited): there is nothing to pause"


def _event(h: History, kind: str, name: str, at_s: float, target=None, **detail) -> None:
    h.event(kind, name, T0 + int(at_s * S), target, json.dumps(detail))


def _run(tmp_path, sends_at: list[float], pause_fails: bool):
    h = History(tmp_path)
    _event(h, "phase", "workloads-start", 0)
    for seq, s in enumerate(sends_at):
        rid = h.send("t", "p0", seq, offset=seq, send_ts=T0 + int(s * S), ack_ts=T0 + int(s * S) + 2000)
        h.drain("t", 0, seq, rid)
    _event(h, "observe", "isr", 0.5, topic="t", partition=0, isr=[1, 2, 3], replicas=[1, 2, 3])
    _event(h, "fault", "kill", 1, "kafka-2", fault_id="kill-1", label="timeline[0] kill",
           description="kafka-2 killed (SIGKILL)")
    pause = {"inject_error": NOT_RUNNING} if pause_fails else {}
    _event(h, "fault", "pause", 2, "kafka-2", fault_id="pause-1", label="timeline[1] pause",
           description="kafka-2 paused (docker): alive but silent", **pause)
    _event(h, "observe", "isr", 3, topic="t", partition=0, isr=[1, 3], replicas=[1, 2, 3])
    _event(h, "heal", "pause", 5, "kafka-2", fault_id="pause-1")
    _event(h, "heal", "kill", 7, "kafka-2", fault_id="kill-1")
    _event(h, "observe", "isr", 9, topic="t", partition=0, isr=[1, 2, 3], replicas=[1, 2, 3])
    h.close()
    (tmp_path / "scenario.yaml").write_text(SCENARIO)


def test_a_failed_pause_and_load_that_never_came_fail_a_stored_run(tmp_path, spark):
    # p0 was to send 100/s for 10 s (1 000 records); it sent 20, from 8 s on
    _run(tmp_path, [8 + i / 10 for i in range(20)], pause_fails=True)
    result = verify_stored_run(str(tmp_path), spark=spark)
    s = result.summary
    assert result.exit_code == 1
    assert (s["counts"]["fault_errors"], s["counts"]["load_shortfall"]) == (1, 1)
    assert s["verdict"]["failures"] == [
        f"fault_errors: 1 > 0 (timeline[1] pause could not be injected: {NOT_RUNNING})",
        "load_shortfall: 1 > 0 (p0 (producer) sent 20 of 1,000 planned records (2.0 %; "
        "100 records/s for 10 s; below 50 %); first send 8.0 s after the workloads started, "
        "longest gap between sends 0.1 s)"]
    # the ISR shrink at 3 s is the kill's, though the pause was "injected" after it
    shrink = [o for o in s["timeline"]["observations"] if o["isr"] == [1, 3]]
    assert [o["fault_id"] for o in shrink] == ["kill-1"]
    isr = {f["fault_id"]: f["shrunk_s"] for f in s["metrics"]["isr"]}
    assert isr == {"kill-1": 2.0, "pause-1": None}
    rec = {r["fault_id"]: r for r in s["metrics"]["recovery"]}
    assert rec["pause-1"]["inject_error"] == NOT_RUNNING and rec["pause-1"]["partitions"] == {}
    assert rec["kill-1"]["inject_error"] is None and list(rec["kill-1"]["partitions"]) == ["t-0"]
    windows = {f["fault_id"]: f for f in s["metrics"]["fault_windows"]}
    assert windows["pause-1"]["inject_error"] == NOT_RUNNING
    assert windows["pause-1"]["ack_latency_ms"]["n"] == 0       # it had no window
    html = (tmp_path / "report" / "index.html").read_text()
    assert f"could not be injected: {NOT_RUNNING}" in html
    assert "Load against its plan" in html and "alive but silent" not in html

    # without the plans (no scenario model) the shortfall is not judged, the fault error is
    s = verify_run(str(tmp_path), Judgement.without_model("unknown: none given", html=False),
                   spark=spark).summary
    assert s["counts"]["fault_errors"] == 1 and "load_shortfall" not in s["counts"]
    assert any(n.startswith("load_shortfall == 0: not judged, no load plan")
               for n in s["verdict"]["not_judged"])


def test_every_fault_injected_and_a_stall_caught_up_passes(tmp_path, spark):
    # the look-alike: the pause took, and p0 sent nothing from 2 s to 6 s (the leader
    # gone) and caught up after: 1 000 records
    sends = [i / 100 for i in range(200)] + [6 + i / 200 for i in range(800)]
    _run(tmp_path, sends, pause_fails=False)
    result = verify_run(str(tmp_path), replace(stored_judgement(str(tmp_path)), html=False),
                        spark=spark)
    s = result.summary
    assert result.exit_code == 0, s["verdict"]
    assert (s["counts"]["fault_errors"], s["counts"]["load_shortfall"]) == (0, 0)
    [load] = s["load"]["workloads"]
    assert (load["sent"], load["planned"], load["longest_gap_s"]) == (1000, 1000, 4.01)
    # the later fault (the pause) takes the shrink it was active for, as before
    shrink = [o for o in s["timeline"]["observations"] if o["isr"] == [1, 3]]
    assert [o["fault_id"] for o in shrink] == ["pause-1"]
