"""The runner: a Scenario in, a stored run and its verdict out.

Phases, in order (each recorded in RUN_DIR/phases.json and as a `phase` event):

  validate         Docker engine reachable, run dir, scenario.yaml and manifest.json written
  images           the Kafka (and toxiproxy) images built if missing (cached by hash)
  cluster-up       DockerCluster started and healthy; its stop and log collection pushed
                   on the teardown stack
  observer         the metadata observer writing `observe` events (leader, isr, controller)
  topics           the scenario's topics, tolerant of a fresh cluster's transient errors
  workloads-start  consumer groups, then producers, then Kafka's Java clients
  warm-up          until every partition written to has its first ack
  faults           the timeline and the nemesis, each fault on its own timer
  heal-all         every fault healed and every node swept; what is left is reported
  recovery-wait    until every partition has a leader and a full ISR (bounded)
  workloads-stop   producers finish their duration, consumers catch up and stop
  drain            every partition read from the start (workloads.drain)
  logs             each container's output into RUN_DIR/logs
  cluster-stop     containers, network and mounts removed
  verify           the history reconciled (spark_reports.verify_run): anomalies, metrics,
                   the verdict against the expectations, report/ written
  verdict          RUN_DIR/result.json and the exit code: 0 held, 1 violated, 2 could not judge
  report           the end-of-run table in the terminal

Teardown is one stack (harness.context.Teardown) built as the phases go: a
Ctrl-C, a SIGTERM or an error in any phase runs what is left of it, newest
first (heal-all, workloads stopped, observer, logs, cluster), every finalizer
even when one fails, with Ctrl-C ignored meanwhile. The drain is skipped then,
and `harness verify RUN_DIR` says "unknown: interrupted in phase X".
A `kill -9` leaves containers labelled with a dead owner: `harness gc`.
"""
from __future__ import annotations

import logging
import signal
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from clusters.labels import new_run_id
from harness.context import RunContext, Teardown
from harness.errors import HarnessError
from harness.history import EventLog
from harness.phases import INTERRUPTED, PhaseLog, write_json
from harness.run_steps import STEPS_LIVE, RunState
from harness.run_steps_late import STEPS_LATE
from harness.scenario import Scenario

log = logging.getLogger(__name__)
STEPS = {**STEPS_LIVE, **STEPS_LATE}

LIVE_PHASES = ("validate", "images", "cluster-up", "observer", "topics", "workloads-start",
               "warm-up", "faults", "heal-all", "recovery-wait", "workloads-stop", "drain",
               "logs", "cluster-stop")
JUDGE_PHASES = ("verify", "verdict", "report")


@dataclass
class RunOptions:
    runs_dir: Path = Path("runs")
    verify: bool = True
    spark_master: str | None = None
    progress: str = "auto"             # auto (rich on a TTY, plain lines otherwise), plain, none
    run_id: str | None = None
    spark: Any = None                  # a SparkSession to verify in (a suite shares one)


@dataclass
class RunResult:
    run_id: str
    run_dir: Path
    exit_code: int
    status: str                         # passed, failed, unknown
    reason: str | None = None
    summary: dict[str, Any] | None = None
    phases: list[dict[str, Any]] = field(default_factory=list)
    interrupted: bool = False           # Ctrl-C or SIGTERM: a suite or compare stops too


def run_scenario(scenario: Scenario, options: RunOptions | None = None) -> RunResult:
    """Run every phase; return the result. Raises nothing but KeyboardInterrupt-free
    HarnessErrors from before the run dir exists (bad input: exit 2, nothing started)."""
    options = options or RunOptions()
    run_id = options.run_id or new_run_id()
    run_dir = Path(options.runs_dir) / run_id
    run_dir.mkdir(parents=True, exist_ok=False)
    events = EventLog(run_dir, run_id, writer_name="runner-events")
    ctx = RunContext(run_id, run_dir, events, scenario=scenario, seed=scenario.seed)
    state = RunState(ctx=ctx, teardown=Teardown(), phases=PhaseLog(run_dir, events),
                     options=options)
    try:
        _live(state)
        if state.stopped_in is None:
            _judge(state)
    finally:
        state.close_progress()
        events.close()
    return state.result()


def _live(state: RunState) -> None:
    """The live phases; any interruption or error ends them and runs the teardown."""
    try:
        state.start_progress()
        for name in LIVE_PHASES:
            with state.phases.phase(name) as detail:
                STEPS[name](state, detail)
    except KeyboardInterrupt:
        state.stopped_in, state.stop_reason = _last(state), INTERRUPTED
    except Exception as e:  # noqa: BLE001 - reported as "could not run" (exit 2)
        state.stopped_in, state.stop_reason = _last(state), f"{type(e).__name__}: {e}"
        log.debug("phase %s failed", state.stopped_in, exc_info=True)
    finally:
        if state.teardown.pending():
            _teardown(state)


def _last(state: RunState) -> str:
    return state.phases.records[-1]["name"] if state.phases.records else "start"


def _teardown(state: RunState) -> None:
    """Whatever started, stopped: newest first, each finalizer recorded as its phase."""
    state.say(f"cleaning up ({', '.join(state.teardown.pending())}); "
              "Ctrl-C is ignored until this ends (after kill -9: harness gc)")
    saved = _ignore_signals()
    try:
        for name in state.teardown.pending():
            try:
                with state.phases.phase(name):
                    state.teardown.run(name)
            except Exception as e:  # noqa: BLE001 - the next finalizer still runs
                state.teardown.errors[name] = f"{type(e).__name__}: {e}"
        drained = any(r["name"] == "drain" for r in state.phases.records)
        if state.stopped_in is not None and not drained:
            state.phases.skipped("drain", f"the run stopped in phase {state.stopped_in}")
    finally:
        _restore_signals(saved)


def _ignore_signals() -> dict:
    saved = {}
    for sig in (signal.SIGINT, signal.SIGTERM):
        try:
            saved[sig] = signal.signal(sig, signal.SIG_IGN)
        except ValueError:        # not the main thread: nothing to ignore
            pass
    return saved


def _restore_signals(saved: dict) -> None:
    for sig, handler in saved.items():
        signal.signal(sig, handler if handler is not None else signal.SIG_DFL)


def _judge(state: RunState) -> None:
    for name in JUDGE_PHASES:
        if not state.options.verify:
            state.phases.skipped(name, "--no-verify")
            continue
        try:
            with state.phases.phase(name) as detail:
                STEPS[name](state, detail)
        except KeyboardInterrupt:
            state.stopped_in, state.stop_reason = name, INTERRUPTED
            _stop_spark()
            return
        except HarnessError as e:
            state.stopped_in, state.stop_reason = name, str(e)
            return
        except Exception as e:  # noqa: BLE001 - a crash of the checker: could not judge
            state.stopped_in, state.stop_reason = name, f"{type(e).__name__}: {e}"
            return


def _stop_spark() -> None:
    """Ctrl-C does not reach Spark's driver JVM (PySpark starts it ignoring SIGINT), and
    a JVM whose start-up was interrupted is not even known to PySpark yet: end every
    JVM this process started, so none outlives the run."""
    import os

    from harness.orphans import child_jvms
    for pid in child_jvms(os.getpid()):
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass


def write_result(state: RunState, result: RunResult) -> None:
    write_json(state.ctx.run_dir / "result.json",
               {"run_id": result.run_id, "status": result.status, "exit_code": result.exit_code,
                "reason": result.reason})
