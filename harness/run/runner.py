"""The runner: a Scenario in, a stored run and its verdict out; and the loop that runs
many (suites, compare) in one Spark session.

The phases, in order, and where each resource is made and removed. A resource is
pushed on the run's finalizers (core.context.Finalizers) as it is made; a normal run
removes it in the phase named beside it, an interrupted or failed one in the
teardown, newest first:

  phase            module            makes                          removed by
  validate         run_dir           scenario.yaml, manifest.json   -
                                     (external: names under the run's prefix)
  images           run_cluster       the images (cached)            -
  cluster-up       run_cluster       the DockerCluster, or an       cluster-stop, logs
                                     ExternalCluster (its stop
                                     deletes the run's topics)
  observer         run_cluster       the metadata observer          logs (observer-stop)
  topics           run_cluster       the topics                     (with the cluster)
  workloads-start  run_workloads     each family the scenario       workloads-stop
                                     names starts its clients
                                     (families/ registry):
                                     records: consumer groups, our
                                     producers (transactional ones
                                     too), Kafka's Java clients;
                                     transactions: none of its own
                                     (its producers are records')
                   run_faults        the fault context              heal-all
  warm-up          run_workloads     -
  faults           run_faults        the fault timeline             heal-all
  heal-all         run_faults        -
  recovery-wait    run_faults        -
  workloads-stop   run_workloads     -
  drain            run_workloads     the drain's rows               -
  logs             run_cluster       logs/<node>.log                -
  cluster-stop     run_cluster       -
  verify           run_judge         report/ (Spark: its own or the suite's session):
                                     the named families' checkers,
                                     composed (spark_reports/pipeline)
  verdict          run_judge         -
  report           run_judge         the end-of-run table

Signals, all here: SIGTERM and SIGHUP end a run as Ctrl-C does (KeyboardInterrupt,
so every `with` unwinds); during the teardown both are ignored, so a second Ctrl-C
cannot leave a fault in place. A Ctrl-C in the live phases runs the teardown and the
drain is skipped (`harness verify RUN_DIR` then says "unknown: interrupted in phase
X"); in the judging phases it also ends Spark's driver JVM. A `kill -9` leaves
containers labelled with a dead owner: `harness gc`. Outside a run (a DockerCluster
in a user's own code, the pytest plugin), clusters/cleanup.py is the safety net: it
turns SIGTERM into KeyboardInterrupt and stops live clusters at exit; a worker
process's own signal handling is workloads/process.py's.
"""
from __future__ import annotations

import logging
import signal
from collections.abc import Callable, Iterable, Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import TYPE_CHECKING

from clusters.labels import new_run_id
from core.context import RunContext, RunOptions
from core.errors import HarnessError
from core.history import EventLog
from harness.run import Run, RunResult, run_dir
from harness.run import cluster as run_cluster
from harness.run import faults as run_faults
from harness.run import judge as run_judge
from harness.run import workloads as run_workloads
from harness.run.phases import INTERRUPTED, PhaseLog
from harness.run.progress import make_progress
from spark_reports.session import session_scope

if TYPE_CHECKING:
    from harness.scenario import Scenario

log = logging.getLogger(__name__)
Step = Callable[[Run, dict], None]

LIVE: tuple[tuple[str, tuple[Step, ...]], ...] = (
    ("validate", (run_dir.validate,)),
    ("images", (run_cluster.images,)),
    ("cluster-up", (run_cluster.cluster_up,)),
    ("observer", (run_cluster.observe,)),
    ("topics", (run_cluster.topics,)),
    # faults armed after the workloads: their heal-all runs before the workloads stop
    ("workloads-start", (run_workloads.start, run_faults.arm)),
    ("warm-up", (run_workloads.warm_up,)),
    ("faults", (run_faults.play,)),
    ("heal-all", (run_faults.heal,)),
    ("recovery-wait", (run_faults.recovery_wait,)),
    ("workloads-stop", (run_workloads.stop,)),
    ("drain", (run_workloads.drain,)),
    ("logs", (run_cluster.logs,)),
    ("cluster-stop", (run_cluster.cluster_stop,)),
)
JUDGE: tuple[tuple[str, tuple[Step, ...]], ...] = (
    ("verify", (run_judge.verify,)),
    ("verdict", (run_judge.verdict,)),
    ("report", (run_judge.report,)),
)
LIVE_PHASES = tuple(name for name, _ in LIVE)
JUDGE_PHASES = tuple(name for name, _ in JUDGE)

__all__ = ["RunOptions", "RunResult", "run_scenario", "run_all", "LIVE_PHASES", "JUDGE_PHASES"]


def run_scenario(scenario: "Scenario", options: RunOptions | None = None) -> RunResult:
    """Run every phase; return the result. Raises nothing but HarnessErrors from before
    the run dir exists (bad input: exit 2, nothing started)."""
    options = options or RunOptions()
    run_id = options.run_id or new_run_id()
    path = Path(options.runs_dir) / run_id
    path.mkdir(parents=True, exist_ok=False)
    events = EventLog(path, run_id, writer_name="runner-events")
    ctx = RunContext(run_id, path, events, options=options, seed=scenario.seed)
    run = Run(ctx, scenario, PhaseLog(path, events))
    try:
        with _signals_interrupt():
            run.progress = make_progress(run, options.progress)
            if run.progress is not None:
                run.progress.start()
            _live(run)
            if run.stopped_in is None:
                _judge(run)
    finally:
        run.close_progress()
        events.close()
    result = run.result()
    run_dir.write_result(run, result)
    return result


def _live(run: Run) -> None:
    """The live phases; any interruption or error ends them and runs the teardown."""
    try:
        for name, steps in LIVE:
            with run.phases.phase(name) as detail:
                for step in steps:
                    step(run, detail)
    except KeyboardInterrupt:
        run.stopped_in, run.stop_reason = _last(run), INTERRUPTED
    except Exception as e:  # noqa: BLE001 - reported as "could not run" (exit 2)
        run.stopped_in, run.stop_reason = _last(run), f"{type(e).__name__}: {e}"
        log.debug("phase %s failed", run.stopped_in, exc_info=True)
    finally:
        if run.ctx.finalizers.pending():
            _teardown(run)


def _last(run: Run) -> str:
    return run.phases.records[-1]["name"] if run.phases.records else "start"


def _teardown(run: Run) -> None:
    """Whatever started, stopped: newest first, each finalizer recorded as its phase."""
    finalizers = run.ctx.finalizers
    run.say(f"cleaning up ({', '.join(finalizers.pending())}); "
            "Ctrl-C is ignored until this ends (after kill -9: harness gc)")
    with _signals_ignored():
        for name in finalizers.pending():
            try:
                with run.phases.phase(name):
                    finalizers.run(name)
            except Exception as e:  # noqa: BLE001 - the next finalizer still runs
                finalizers.errors[name] = f"{type(e).__name__}: {e}"
        drained = any(r["name"] == "drain" for r in run.phases.records)
        if run.stopped_in is not None and not drained:
            run.phases.skipped("drain", f"the run stopped in phase {run.stopped_in}")


def _judge(run: Run) -> None:
    for name, steps in JUDGE:
        if not run.ctx.options.verify:
            run.phases.skipped(name, "--no-verify")
            continue
        try:
            with run.phases.phase(name) as detail:
                for step in steps:
                    step(run, detail)
        except KeyboardInterrupt:
            run.stopped_in, run.stop_reason = name, INTERRUPTED
            run_judge.stop_spark()
            return
        except HarnessError as e:
            run.stopped_in, run.stop_reason = name, str(e)
            return
        except Exception as e:  # noqa: BLE001 - a crash of the checker: could not judge
            run.stopped_in, run.stop_reason = name, f"{type(e).__name__}: {e}"
            return


# -- the signal policy -----------------------------------------------------------------

def _raise_interrupt(signum, frame):
    raise KeyboardInterrupt(f"signal {signum}")


@contextmanager
def _signals_interrupt() -> Iterator[None]:
    """SIGTERM and SIGHUP end the run as Ctrl-C does (Python's default for SIGTERM is
    to die without running any finalizer)."""
    with _handlers({signal.SIGTERM: _raise_interrupt, signal.SIGHUP: _raise_interrupt}):
        yield


@contextmanager
def _signals_ignored() -> Iterator[None]:
    with _handlers({signal.SIGINT: signal.SIG_IGN, signal.SIGTERM: signal.SIG_IGN}):
        yield


@contextmanager
def _handlers(wanted: dict) -> Iterator[None]:
    saved = {}
    for sig, handler in wanted.items():
        try:
            saved[sig] = signal.signal(sig, handler)
        except ValueError:        # not the main thread: the caller's policy stands
            pass
    try:
        yield
    finally:
        for sig, handler in saved.items():
            signal.signal(sig, handler if handler is not None else signal.SIG_DFL)


# -- many runs, one Spark session (suites, compare) ------------------------------------

def run_all(items: Iterable, scenario_of: Callable, runs_dir: Path, progress: str,
            spark_master: str | None, on_result: Callable) -> bool:
    """Run each item's scenario (scenario_of(i, item); None: skip it) in order, verified
    in one Spark session; on_result(i, item, result) after each. A Ctrl-C or SIGTERM, in
    a run or between two, stops them all: returns True when interrupted."""
    with _signals_interrupt(), ExitStack() as stack:
        try:
            with run_judge.stderr_to(Path(runs_dir) / "spark.log"):
                spark = stack.enter_context(session_scope(spark_master))
            for i, item in enumerate(items):
                scenario = scenario_of(i, item)
                if scenario is None:
                    continue
                result = run_scenario(scenario, RunOptions(runs_dir=runs_dir, progress=progress,
                                                           spark=spark, spark_master=spark_master))
                on_result(i, item, result)
                if result.interrupted:
                    return True
        except KeyboardInterrupt:          # between two runs; inside one, the runner handles it
            return True
    return False
