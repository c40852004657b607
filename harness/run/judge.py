"""Judging a run: the verify, verdict and report phases, and `harness verify RUN_DIR`.

The checker (verifiers.verify) receives one Judgement from here (judgement_of): built
from the run's own scenario model for `harness run`, from the stored scenario.yaml read
once into the model for `harness verify` (stored_judgement).
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
from families import named_by
from harness.run import Run
from harness.run.end_table import print_end_table
from harness.run.orphans import child_jvms
from harness.run.run_dir import write_manifest
from harness.scenario import Scenario, Stored, load_stored
from verifiers.expectations import ExpectationSet, load_expectations, parse_document
from verifiers.facts import model_facts
from verifiers.judgement import Judgement
from verifiers.verify import verify_run
from workloads.share_log import reconcile_share_run


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
    ctx = run.ctx
    run.say("verify: reconciling the history with Spark")
    write_manifest(run, end_us=int(time.time() * 1e6))
    with stderr_to(ctx.run_dir / "logs" / "spark.log"):
        result = verify_run(str(ctx.run_dir), judgement_of(run.scenario),
                            spark_master=ctx.options.spark_master, spark=ctx.options.spark)
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

def judgement_of(s: Scenario, doc: dict | None = None) -> Judgement:
    """What the run is judged by, from its scenario model (`doc`: the document it was
    read from, for the report; else the model's own)."""
    facts, sources = model_facts(s, None)
    return Judgement(s.expect, facts, sources, threshold_s=s.report.unavailability_threshold_s,
                     html=s.report.html, families=tuple(f.name for f in named_by(s.workload)),
                     load_plans=s.load_plans,
                     scenario_doc=doc if doc is not None else s.to_dict()
                     ).with_expectations(s.expect)


def stored_judgement(run_dir: str, expect: str | ExpectationSet | None = None) -> Judgement:
    """A stored run's judgement: its scenario.yaml read once into the model; without a
    model, the stored document's own expectations (else the defaults) and unknown facts.
    `expect` (an --expect file, or a set) replaces the scenario's expectations."""
    stored = load_stored(Path(run_dir) / "scenario.yaml")
    if stored.model is not None:
        j = judgement_of(stored.model, stored.doc)
    else:
        j = Judgement.without_model(stored.problem or "unknown", _stored_expectations(stored),
                                    stored.doc, stored.notes)
    if expect is None:
        return j
    if not isinstance(expect, ExpectationSet):
        path = Path(expect)
        if not path.is_file():
            raise HarnessError(f"--expect {expect}: no such file")
        expect = load_expectations(path.read_text(), str(path))
    return j.with_expectations(expect)


def _stored_expectations(stored: Stored) -> ExpectationSet | None:
    for key in ("expectations", "expect"):
        if stored.doc is not None and key in stored.doc:
            return parse_document(stored.doc[key], f"scenario.yaml: {key}")
    return None


def verify_stored_run(run_dir: str, spark_master: str | None = None, expect=None, *,
                      spark=None):
    """verifiers.verify.verify_run of a stored run, by its stored judgement. Share-group
    journals a dead harness left unconverted become their rows first."""
    if os.path.isdir(run_dir):
        reconcile_share_run(run_dir, os.path.basename(os.path.normpath(run_dir)))
    return verify_run(run_dir, stored_judgement(run_dir, expect), spark_master=spark_master,
                      spark=spark)


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
    print(f"run {s.run_id}: {v.status.upper()}")
    if s.counts:
        print("  counts: " + ", ".join(f"{k} {s.count(k)}" for k in
                                       ("sent", "acked", "failed", "indeterminate", "consumed")))
    if s.anomalies:
        print("  anomalies: " + ", ".join(f"{k} {n}" for k, n in s.anomalies.items()))
    if v.reason:
        print(f"  unknown: {v.reason}")
    for f in v.failures:
        print(f"  FAIL {f}")
    for n in v.not_judged:
        print(f"  note {n}")
    print(f"  report: {result.report_dir}/index.html")
    sys.stdout.flush()
