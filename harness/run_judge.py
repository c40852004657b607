"""Judging a run: the verify, verdict and report phases, and `harness verify RUN_DIR`.

The checker (verifiers.verify) receives the scenario model from here: the run's own
for `harness run`, the stored scenario.yaml read into the model for `harness verify`.
Its Spark session is the suite's shared one or its own, stopped when it is done
(spark_reports.session.session_scope); a Ctrl-C during verification also ends the
driver JVM, which PySpark starts ignoring SIGINT.
"""
from __future__ import annotations

import os
import signal
import sys
import time
import traceback
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from core.errors import HarnessError, SpecError
from harness.end_table import print_end_table
from harness.orphans import child_jvms
from harness.run import Run
from harness.run_dir import write_manifest
from harness.scenario import load_stored
from verifiers.verify import verify_run


@contextmanager
def stderr_to(path: Path) -> Iterator[None]:
    """fd 2 into a file for the duration: a JVM started meanwhile (Spark's driver)
    keeps writing its log there instead of over the live progress display."""
    path.parent.mkdir(parents=True, exist_ok=True)
    sys.stderr.flush()
    saved = os.dup(2)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    try:
        os.dup2(fd, 2)
        yield
    finally:
        sys.stderr.flush()
        os.dup2(saved, 2)
        os.close(saved)
        os.close(fd)


def stop_spark() -> None:
    """Ctrl-C does not reach Spark's driver JVM (PySpark starts it ignoring SIGINT), and
    a JVM whose start-up was interrupted is not even known to PySpark yet: end every
    JVM this process started, so none outlives the run."""
    for pid in child_jvms(os.getpid()):
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass


# -- the phases ------------------------------------------------------------------------

def verify(run: Run, detail: dict) -> None:
    s, ctx = run.scenario, run.ctx
    run.say("verify: reconciling the history with Spark")
    write_manifest(run, end_us=int(time.time() * 1e6))
    with stderr_to(ctx.run_dir / "logs" / "spark.log"):
        result = verify_run(str(ctx.run_dir), spark_master=ctx.options.spark_master,
                            spark=ctx.options.spark, scenario=s,
                            unavailability_threshold_s=s.report.unavailability_threshold_s,
                            write_html=s.report.html,
                            load_plans=s.load_plans)  # planned: load_shortfall
    run.verified = result
    detail.update(status=result.verdict.status, report=f"{result.report_dir}/index.html")


def verdict(run: Run, detail: dict) -> None:
    v = run.verified
    if v is None:
        raise HarnessError("no verification result to judge")
    detail.update(status=v.verdict.status, exit_code=v.verdict.exit_code,
                  failures=list(v.verdict.failures))


def report(run: Run, detail: dict) -> None:
    print_end_table(run)


# -- a stored run ----------------------------------------------------------------------

def verify_stored_run(run_dir: str, spark_master: str | None = None, expect=None, *,
                      spark=None, write_html: bool = True):
    """verifiers.verify.verify_run with the run's stored scenario.yaml read into the
    scenario model (its facts and threshold), or without a model and why."""
    model, problem = load_stored(Path(run_dir) / "scenario.yaml")
    return verify_run(run_dir, spark_master, expect, spark=spark, write_html=write_html,
                      scenario=model, scenario_problem=problem,
                      load_plans=model.load_plans if model is not None else None)  # planned


def verify_command(run_dir: str, spark_master: str | None, expect: str | None) -> int:
    """`harness verify`: reconcile a run, print the verdict; 0 passed, 1 failed, 2 unknown."""
    try:
        result = verify_stored_run(run_dir, spark_master=spark_master, expect=expect)
    except (HarnessError, SpecError):
        raise
    except Exception as e:  # noqa: BLE001 - a crash means "could not judge" (2), never "failed" (1)
        traceback.print_exc()
        raise HarnessError(f"verify could not judge {run_dir}: {type(e).__name__}: "
                           f"{str(e).splitlines()[0] if str(e) else ''}") from e
    _print_verdict(result)
    return result.verdict.exit_code


def _print_verdict(result) -> None:
    s, v = result.summary, result.verdict
    an = s.get("anomalies") or {}
    print(f"run {s.get('run_id')}: {v.status.upper()}")
    if s.get("counts"):
        c = s["counts"]
        print("  counts: " + ", ".join(f"{k} {c[k]}" for k in
                                       ("sent", "acked", "failed", "indeterminate", "consumed")))
    if an:
        print("  anomalies: " + ", ".join(f"{k} {n}" for k, n in an.items()))
    if v.reason:
        print(f"  unknown: {v.reason}")
    for f in v.failures:
        print(f"  FAIL {f}")
    for n in v.not_judged:
        print(f"  note {n}")
    print(f"  report: {result.report_dir}/index.html")
    sys.stdout.flush()
