"""The reconciler's pipeline: a stored run history in, its summary and report/ out.
`reconcile` is the one entry point (verifiers/verify.py calls it with the run's
judgement: the families to check, the threshold, and how to judge the summary).

The flow, the same for every history:

1. validate the history with pyarrow before Spark starts (files, columns, types,
   enumerated values; spark_reports/validate.py), which also yields the counts;
2. build the records family's views (families/records/views.py), the offset views in
   a thread of their own, while a small job checks that no record_id is produced
   twice (a malformed history);
3. every named family's metrics (Family.metrics: the records family's latencies,
   throughput, unavailability and recovery, families/records/metrics.py; the
   others' from their own tables), fed the parsed events (core/timeline.py) and the
   views as a RunData (families/base.py), in a thread of their own, beside
4. every named family's anomaly kinds, one function each (families/*/checker.py),
   their rows written with their explanation (spark_reports/anomaly_output.py);
5. the timeline, what else went wrong (spark_reports/problems.py), the verdict (the
   caller's `judge`), then summary.json and index.html.

summary["step_seconds"] times each step; `view.offsets` and `view.groups` overlap
`view.records` (step 2 builds them beside it), the metrics' (`metrics.*`) overlap
the anomalies', and `metrics_wait` is how long the anomalies then waited. A small
history's kinds are fetched side by side (KINDS_AT_ONCE): `anomalies.<kind>` is then
the wait for that kind after the kind before it.

A malformed history (HistoryInvalid) is judged unknown by the caller; a summary and
index.html are still written then, saying why.
"""
from __future__ import annotations

import copy
import math
import threading
import time
import traceback
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from core.timeline import parse_events
from families import anomaly_frames
from families.base import Family, RunData
from families.records.checker import Inputs
from families.records.views import SIDE_COUNTS, build_views, repeated_records
from spark_reports.anomaly_output import write_anomalies
from spark_reports.load_plan import summarize_load
from spark_reports.problems import (
    client_fatals,
    find_problems,
    summarize_fault_errors,
    workload_deaths,
)
from spark_reports.report_html import render_report
from spark_reports.scratch import Scratch
from spark_reports.session import session_scope, spark_identity
from spark_reports.storage import RunLocation
from spark_reports.summary import Summary
from spark_reports.tables import read_on_driver, read_tables
from spark_reports.validate import HistoryInvalid, check_files, check_values

__all__ = ["HistoryInvalid", "Reconciled", "RunLocation", "Summary", "reconcile"]


ABANDONED = "OPERATION_ABANDONED"
ABANDONED_TRIES = 2


@dataclass
class Reconciled:
    summary: Summary         # as written to report/summary.json
    verdict: Any             # what `judge` returned
    report_dir: str


def reconcile(run_dir: str, summary: dict, families: tuple[Family, ...], threshold_s: float,
              judge: Callable[[dict, str | None], Any], *, spark=None,
              spark_master: str | None = None, scenario_doc: dict | None = None,
              manifest: dict | None = None, write_html: bool = True,
              fault_colours: dict | None = None, load_plans: tuple | None = None) -> Reconciled:
    """Reconcile RUN_DIR's history into `summary` (its config and notes already set by
    the caller), judge it (judge(summary, why_unknown) -> an object with to_dict(), the
    verdict: why_unknown is set when the history could not be judged), write
    report/summary.json and report/index.html. `load_plans`: each producing workload's
    plan (spark_reports/load_plan.py; None: load_shortfall is not judged)."""
    t0 = time.monotonic()
    loc = RunLocation.of(run_dir)
    summary.setdefault("counts", {})
    summary.setdefault("anomalies", {})
    summary.setdefault("metrics", {})
    samples: dict = {}
    why_unknown = None
    try:
        samples = _checked(loc, summary, families, threshold_s, spark, spark_master, load_plans)
    except HistoryInvalid as e:
        why_unknown = str(e)
    if why_unknown is None and summary["counts"].get("consumed_drain") == 0:
        why_unknown = ("no consumed rows with phase = 'drain': without the final drain "
                       "lost, overwritten and skipped cannot be judged (the workload must "
                       "read every partition from the earliest offset after healing)")
    verdict = judge(summary, why_unknown)
    summary["verdict"] = verdict.to_dict()
    summary["verify_seconds"] = round(time.monotonic() - t0, 3)
    summary["generated_at"] = datetime.now(UTC).isoformat(timespec="seconds")
    summary = _clean(summary)
    typed = Summary.from_dict(summary)
    loc.write_text(typed.to_json(), "report", "summary.json")
    if write_html:
        _write_html(loc, typed, scenario_doc, manifest, samples, fault_colours)
    return Reconciled(typed, verdict, loc.path("report"))


def _checked(loc: RunLocation, summary: dict, families, threshold_s: float, spark,
             spark_master, load_plans) -> dict:
    """Validate, then the Spark part; the samples of the anomaly rows for the report."""
    history = check_files(loc)
    summary["notes"] += history.notes
    # enumerated values, counts and names: a few dictionary-encoded columns read by
    # pyarrow, so a malformed history is refused before Spark starts
    t_scan = time.monotonic()
    scanned = check_values(loc, history)
    summary["step_seconds"] = {"validate": round(time.monotonic() - t_scan, 3)}
    rows = scanned.counts["sent"] + scanned.counts["consumed"]
    before = copy.deepcopy(summary)
    for attempt in range(1, ABANDONED_TRIES + 1):
        try:
            with session_scope(spark_master, spark, history_rows=rows, about=loc.base) as session:
                if spark is None:
                    session.conf.set("spark.sql.shuffle.partitions",
                                     str(_shuffle_partitions(loc, history)))
                return _reconcile(session, loc, history, scanned, summary, families, threshold_s,
                                  load_plans)
        except Exception as e:
            if attempt == ABANDONED_TRIES or not abandoned(e):
                raise
            print("harness: the Spark Connect server abandoned one of this verify's operations "
                  f"({ABANDONED}: its client was slow to fetch the result); verifying again",
                  flush=True)
            summary.clear()
            summary.update(copy.deepcopy(before))
    raise AssertionError("unreachable")


def abandoned(e: BaseException | None) -> bool:
    """Whether e, or an error it was raised from, is the Connect server's
    INVALID_HANDLE.OPERATION_ABANDONED. The server drops an operation whose client has
    not fetched its result within spark.connect.execute.manager.detachedTimeout; seen
    twice at load ~200 on 2 cores, and the same verify asked again was identical
    (benchmarks/RESULTS.md, 2026-11-27): the history is unchanged, so it is safe to ask again."""
    seen = set()
    while e is not None and id(e) not in seen:
        if ABANDONED in str(e):
            return True
        seen.add(id(e))
        e = e.__cause__ or e.__context__
    return False


def _clean(x: Any) -> Any:
    """JSON-safe: no NaN/inf (→ null), tuples → lists."""
    if isinstance(x, float) and (math.isnan(x) or math.isinf(x)):
        return None
    if isinstance(x, dict):
        return {str(k): _clean(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [_clean(v) for v in x]
    return x


def _write_html(loc: RunLocation, summary: Summary, scenario_doc, manifest, samples: dict,
                fault_colours) -> None:
    try:
        page = render_report(summary, scenario_doc, manifest, samples, fault_colours=fault_colours)
    except Exception:  # noqa: BLE001 - the verdict must not be lost to a plotting bug
        page = ("<!doctype html><meta charset='utf-8'><title>harness report</title>"
                "<h1>report could not be rendered</h1><pre>"
                + traceback.format_exc().replace("&", "&amp;").replace("<", "&lt;")
                + "</pre><pre>" + summary.to_json()
                .replace("&", "&amp;").replace("<", "&lt;") + "</pre>")
    loc.write_text(page, "report", "index.html")


def _shuffle_partitions(loc: RunLocation, history) -> int:
    """About one shuffle partition per 32 MiB of input (AQE coalesces small ones)."""
    files = history.tables["produced"].files + history.tables["consumed"].files
    size = sum(i.size or 0 for i in loc.fs.get_file_info(files))
    return max(4, min(800, size // (32 << 20)))


class _Steps:
    """Seconds per step, kept in summary["step_seconds"] (for benchmarks and slow runs):
    each the time since the step before, or (`took`, for steps that run beside others)
    its own."""

    def __init__(self, into: dict):
        self.into, self.t = into, time.monotonic()

    def __call__(self, name: str) -> None:
        now = time.monotonic()
        self.into[name] = round(now - self.t, 3)
        self.t = now

    def took(self, name: str, seconds: float) -> None:
        self.into[name] = round(seconds, 3)
        self.t = time.monotonic()

    def restart(self) -> None:
        self.t = time.monotonic()


def _reconcile(spark, loc, history, scanned, summary, families, threshold, load_plans):
    """The views, then the named families' metrics (in a thread of their own) beside
    their anomaly kinds; the samples of their rows for the report."""

    step = _Steps(summary.setdefault("step_seconds", {}))
    frames = read_tables(spark, loc, history)
    if scanned.run_id is not None:
        summary["run_id"] = scanned.run_id
    summary["config"]["spark"] = spark_identity(spark)
    # a small job, beside the first big aggregation (it fills the cores' idle moments)
    identity = _Background(spark, "harness-identity", lambda: repeated_records(frames["produced"]))
    event_rows = read_on_driver(loc, history, "events",
                                ("ts_us", "kind", "name", "target", "detail"))
    scratch = Scratch(spark, loc)

    def materialize(name, df, observe=None):
        t = time.monotonic()
        out = scratch.materialize(name, df, observe)
        step.took(f"view.{name}", time.monotonic() - t)
        return out

    background = [identity]

    def beside(fn):
        background.append(_Background(spark, "harness-views", fn))
        return background[-1].result

    try:
        views = build_views(frames["produced"], frames["consumed"], frames["commits"],
                            materialize, beside)
        step.restart()
        _refuse_repeated(identity.result(), loc)
        tl = parse_events(event_rows, views.sizes["run_end_us"])
        x = Inputs(views, frames["consumed"], materialize, scanned.read_committed_groups,
                   tables=frames, events=event_rows)
        data = _run_data(spark, loc, history, scanned, event_rows, tl, x, threshold)
        # beside the anomaly rules' many small jobs, which leave a core idle at times
        metrics = _Background(spark, "harness-metrics", lambda: _family_metrics(families, data))
        background.append(metrics)
        frames = anomaly_frames(x, families)
        kinds = tuple(k for f in families for k in f.kinds)
        result = write_anomalies(spark, frames, loc, tl, kinds, step, frozenset(x.no_rows),
                                 _kinds_beside(beside, scanned))
        measured = metrics.result()
        step("metrics_wait")
    finally:
        for job in background:      # the anomaly rules failed: stop the others first
            job.cancel()
        scratch.remove()
    _summarize_anomalies(summary, result, {k: views.sizes[k] for k in SIDE_COUNTS}, scanned)
    for out in measured:            # what else went wrong reads them (consumer lag)
        summary["step_seconds"].update({f"metrics.{k}": v for k, v in out.get("steps", {}).items()})
        summary.update(out.get("summary", {}))
    _summarize_timeline(summary, tl)
    _summarize_problems(summary, tl, loc)
    summarize_load(summary, load_plans, loc, history.tables["produced"].files, tl)
    for out in measured:            # the run's own counts first, as the report lists them
        summary["counts"].update(out.get("counts", {}))
    return {"anomalies": result.samples, "columns": result.columns}


# A small history's anomaly kinds are fetched side by side, a few at a time: each is a
# few small Spark jobs whose round trips, analysis and planning leave the cores idle
# (a pipeline run of 23 000 records: 8 kinds with rows, benchmarks/RESULTS.md). A
# large history's kinds are fetched one at a time, each held only while it is written.
KINDS_SIDE_BY_SIDE_MAX_ROWS = 1_000_000
KINDS_AT_ONCE = 4


def _kinds_beside(beside, scanned):
    """write_anomalies' `beside` for this history: None (one at a time) for a large one."""
    if scanned.counts["sent"] + scanned.counts["consumed"] > KINDS_SIDE_BY_SIDE_MAX_ROWS:
        return None
    slots = threading.BoundedSemaphore(KINDS_AT_ONCE)

    def bounded(fn):
        def in_a_slot():
            with slots:
                return fn()
        return beside(in_a_slot)
    return bounded


def _run_data(spark, loc, history, scanned, event_rows, tl, checked, threshold) -> RunData:
    """What the families' metrics read (families/base.py)."""
    def read(table: str, columns: tuple[str, ...]) -> list[dict]:
        return read_on_driver(loc, history, table, columns) if table in history.tables else []

    return RunData(read, event_rows, tl, threshold, spark=spark, checked=checked,
                   topics=tuple(sorted(scanned.topics)), partitions=tuple(scanned.partitions))


def _family_metrics(families, data: RunData) -> list[dict]:
    """Each named family's own metrics (Family.metrics), in the registry's order."""
    return [f.metrics(data) for f in families if f.metrics is not None]


def _summarize_anomalies(summary: dict, result, side_counts: dict, scanned) -> None:
    summary["counts"] = {**scanned.counts, **side_counts}
    summary["anomalies"] = result.counts
    summary["anomalies_by_fault"] = result.by_fault
    summary["anomaly_explanations"] = {k: v for k, v in result.explanations.items() if v}
    summary["poll_checks"] = {"left_out": scanned.counts["consumed_run_unordered"]}
    if scanned.counts["consumed_run_unordered"]:
        summary["notes"].append(
            f"{scanned.counts['consumed_run_unordered']} run deliveries have no poll_seq or "
            "assignment: poll_skip and nonmonotonic_poll did not judge them")


def _summarize_problems(summary: dict, tl, loc) -> None:
    """Workloads that died (counted: a default expectation) and what else went wrong."""
    deaths = workload_deaths(tl)
    summary["counts"]["workload_deaths"] = len(deaths)
    summary["workload_deaths"] = deaths
    fatals = client_fatals(tl)
    summary["counts"]["client_fatals"] = len(fatals)
    summary["client_fatals"] = fatals
    summary["problems"] = find_problems(tl, loc, summary["metrics"].get("consumer_lag"),
                                        summary["counts"])
    summarize_fault_errors(summary, tl, loc)


def _refuse_repeated(repeated: int, loc) -> None:
    if repeated:
        raise HistoryInvalid([
            (f"{loc.display(loc.path('history', 'produced'))}: column 'record_id' is not "
            f"unique: {repeated} row(s) repeat the record_id of another row "
            "(each record the harness sends gets one produced row)")])


def _summarize_timeline(summary: dict, tl) -> None:
    """summary["timeline"]: the phases, what the observer saw (each change with the
    fault it belongs to), the brokers' names, the producers' own leader changes."""
    summary["notes"] += tl.notes
    summary["timeline"] = {
        "phases": [{"ts_us": ts, "name": n} for ts, n in tl.phases],
        "observations": [{"ts_us": o.ts_us, "name": o.name, "target": o.target,
                          "topic": o.topic, "partition": o.partition, "leader": o.leader,
                          "isr": list(o.isr) if o.isr is not None else None,
                          "fault_id": _owner_id(tl, o.ts_us)}
                         for o in tl.observations],
        "brokers": {str(k): v for k, v in sorted(tl.broker_names().items())},
        # when a producer's own idea of a partition's leader changed (client-leader)
        "client_leaders": [{"ts_us": e.ts_us, "producer": e.target, **e.detail}
                           for e in tl.clients if e.name == "client-leader"],
    }


def _owner_id(tl, ts_us: int) -> str | None:
    """The fault a change seen at ts_us belongs to (core/timeline.py: Timeline.owner)."""
    f = tl.owner(ts_us)
    return f.fault_id if f is not None else None


class _Background:
    """fn() in a thread of its own, its Spark jobs tagged so they can be cancelled.
    A session's tags are the calling thread's (classic PySpark pins each Python thread
    to a JVM thread; Spark Connect's client keeps them per thread), so the tag set in
    the thread marks that thread's operations only, and interruptTag cancels them in
    this session only: concurrent runs on one Connect server do not touch each other's."""

    def __init__(self, spark, tag: str, fn):

        self.spark, self.tag, self.done = spark, tag, threading.Event()
        self.value: Any = None
        self.error: BaseException | None = None

        def run():
            try:
                spark.addTag(tag)
                self.value = fn()
            except BaseException as e:  # noqa: BLE001 - handed to the waiting thread
                self.error = e
            finally:
                self.done.set()
        threading.Thread(target=run, name=tag, daemon=True).start()

    def result(self):
        self.done.wait()
        if self.error is not None:
            raise self.error
        return self.value

    def cancel(self, within_s: float = 60.0) -> None:
        """Cancel its jobs until it stops (it may start another between two checks)."""
        deadline = time.monotonic() + within_s
        while not self.done.is_set() and time.monotonic() < deadline:
            try:
                self.spark.interruptTag(self.tag)
            except Exception:  # noqa: BLE001 - the session is gone (a server that died):
                return         # nothing of it runs any more, and the caller's error says why
            self.done.wait(0.2)


