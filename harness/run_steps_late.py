"""The run's phases from the faults on: faults, heal-all, recovery, stop, drain,
logs, cluster stop, and the judging phases (see harness/runner.py for the order)."""
from __future__ import annotations

import time
from collections.abc import Callable

from harness.context import stderr_to
from harness.errors import HarnessError
from harness.phases import FAILED, write_json
from harness.run_steps import DELIVERY_SLACK_S, RunState, write_manifest

CATCH_UP_QUIET_S = 3.0       # consumers are caught up once they read nothing new this long
CATCH_UP_MAX_S = 30.0


def heal_everything(state: RunState) -> None:
    """The heal-all finalizer: stop the fault timers, then heal and sweep everything."""
    from faults.healall import heal_all
    if state.timeline is not None:
        state.timeline.finish(join_s=30.0)
    state.heal_report = heal_all(state.ctx.faults, state.stop_reason or "completed")


def faults(state: RunState, detail: dict) -> None:
    from harness.fault_timeline import FaultTimeline, plan_faults
    ctx = state.ctx
    plan = plan_faults(state.scenario, state.scenario.seed)
    timeline = FaultTimeline(ctx.faults, plan)
    state.timeline = timeline
    timeline.start()
    last = max((p.at_s + (p.hold_s or 0) for p in plan), default=0.0)
    timeline.wait(last + 600.0)
    detail["faults"] = [p.to_dict() for p in plan]
    write_json(ctx.run_dir / "faults.json", detail["faults"])
    errors = [f"{p.label}: {p.error}" for p in plan if p.error]
    if errors:
        detail["errors"] = errors


def heal(state: RunState, detail: dict) -> None:
    from faults.healall import leftovers
    state.teardown.run("heal-all")
    report = getattr(state, "heal_report", None)
    if report is not None:
        detail.update(healed=report.healed, unhealed=report.unhealed, swept=len(report.swept))
    left = leftovers(state.ctx.faults)
    if left or (report is not None and report.unhealed):
        detail.update(leftovers=left, _outcome=FAILED)


def recovery_wait(state: RunState, detail: dict) -> None:
    from faults.base import wait_full_isr
    started = time.monotonic()
    try:
        wait_full_isr(state.ctx.cluster, state.scenario.faults.recovery_timeout_s)
    except TimeoutError as e:
        detail.update(error=str(e), _outcome=FAILED)
    detail["seconds"] = round(time.monotonic() - started, 3)


def _consumed_rows(state: RunState, tail) -> int:
    return sum(b.num_rows for b in tail.poll())


def stop_workloads(state: RunState) -> None:
    """Graceful on the normal path (producers end their duration, consumers catch up);
    quick when the run was interrupted or failed."""
    graceful = state.stopped_in is None
    w = state.scenario.workload
    if graceful and state.load_started is not None:
        for p in state.producers:
            left = state.load_started + w.duration_s - time.monotonic()
            if not p.wait(max(0.0, left) + p.spec.delivery_timeout_ms / 1000 + DELIVERY_SLACK_S):
                p.stop()
    for p in state.producers:
        if p.result is None:
            p.stop(timeout=None if graceful else 10.0)
    if graceful and state.groups:
        _catch_up(state)
    state.java_stop.set()
    for g in state.groups:
        g.stop(timeout=30.0 if graceful else 10.0)
    for t in state.java:
        t.join(60.0 if graceful else 35.0)
    if state.ctx.events is not None:
        state.ctx.events.emit("phase", "load-end")


def _catch_up(state: RunState) -> None:
    from harness.history_tail import HistoryTail
    tail = HistoryTail(state.ctx.run_dir, "consumed", ["offset"])
    tail.poll()
    deadline = time.monotonic() + CATCH_UP_MAX_S
    quiet_since = time.monotonic()
    while time.monotonic() < deadline and time.monotonic() - quiet_since < CATCH_UP_QUIET_S:
        time.sleep(0.5)
        if _consumed_rows(state, tail):
            quiet_since = time.monotonic()


def workloads_stop(state: RunState, detail: dict) -> None:
    state.teardown.run("workloads-stop")
    detail["producers"] = {p.spec.name: {"exitcode": p.exitcode,
                                         "indeterminate_written": p.result.indeterminate
                                         if p.result else None} for p in state.producers}


def drain(state: RunState, detail: dict) -> None:
    from workloads.drain import drain as drain_all
    result = drain_all(state.scenario.drain, state.ctx)
    detail.update(records=result.records, partitions=result.partitions,
                  complete=result.complete, seconds=result.seconds)
    if not result.complete:
        detail.update(incomplete=result.incomplete, _outcome=FAILED)


def logs(state: RunState, detail: dict) -> None:
    state.teardown.run("observer-stop")
    files = state.teardown.run("logs") or []
    detail["files"] = len(files)


def cluster_stop(state: RunState, detail: dict) -> None:
    state.teardown.run("cluster-stop")


def verify(state: RunState, detail: dict) -> None:
    from spark_reports.verify import verify_run
    s = state.scenario
    state.say("verify: reconciling the history with Spark")
    write_manifest(state.ctx, end_us=int(time.time() * 1e6))
    with stderr_to(state.ctx.run_dir / "logs" / "spark.log"):
        result = verify_run(str(state.ctx.run_dir), spark_master=state.options.spark_master,
                            spark=state.options.spark,
                            unavailability_threshold_s=s.report.unavailability_threshold_s,
                            write_html=s.report.html)
    state.verify_result = result
    detail.update(status=result.verdict.status, report=f"{result.report_dir}/index.html")


def verdict(state: RunState, detail: dict) -> None:
    v = state.verify_result
    if v is None:
        raise HarnessError("no verification result to judge")
    detail.update(status=v.verdict.status, exit_code=v.verdict.exit_code,
                  failures=list(v.verdict.failures))


def report(state: RunState, detail: dict) -> None:
    from harness.end_table import print_end_table
    print_end_table(state)


STEPS_LATE: dict[str, Callable[[RunState, dict], None]] = {
    "faults": faults, "heal-all": heal, "recovery-wait": recovery_wait,
    "workloads-stop": workloads_stop, "drain": drain, "logs": logs,
    "cluster-stop": cluster_stop, "verify": verify, "verdict": verdict, "report": report,
}
