"""verify_run: a stored run history in, report/ and a verdict out.

The `harness verify` command and the runner (at the end of every run) both
call `verify_run`. Steps: read the run's configuration, validate the history
(files, columns, types, enumerated values; with pyarrow, before Spark starts,
which also yields the counts and the names), compute anomalies with
Spark (offending rows written to report/anomalies/<kind>/; on the position
path, spark_reports/position_path.py, when the names fit its catalogs, else on
the general path, spark_reports/reconcile.py) and, in a thread of their own
from the moment every record's metric inputs can be read, the metrics; the
verdict against the expectations, then summary.json, junit.xml, index.html.
Beside the position path's first aggregation, another thread checks that
produced record_ids are `<producer>-<seq>` and unique (identity_check): the
general path takes over when they are not that form, and a repeated record_id
is a malformed history. summary["step_seconds"] times each step; the
metrics' (`metrics.*`) overlap the anomalies', and `metrics_wait` is how long
the anomalies then waited.

The verdict is "unknown" (exit 2) when the history is malformed or has no
`drain` phase; a summary, junit.xml and index.html are still written then,
saying why.

Optional inputs read from RUN_DIR (absent is fine, and the report says so):
- scenario.yaml: facts for conditional expectations (keys: verifiers/facts.py);
  `expectations:` (or `expect:`) — the scenario's expectations, used when no
  --expect file is given (format: verifiers/expectations.py);
  `verify.unavailability_threshold_s` (or top-level
  `unavailability_threshold_s`), default 1 s. Shown in the report.
- manifest.json: shown in the report as is.
"""
from __future__ import annotations

import json
import math
import os
import time
import traceback
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import yaml

from harness.errors import HarnessError
from spark_reports.anomalies import KINDS
from spark_reports.storage import RunLocation
from spark_reports.validate import HistoryInvalid, check_files, check_values
from verifiers.expectations import ExpectationSet, load_expectations, parse_document
from verifiers.facts import derive_facts
from verifiers.verdict import Verdict, judge, unknown



@dataclass
class RunConfig:
    scenario: dict | None
    manifest: dict | None
    notes: list[str] = field(default_factory=list)


@dataclass
class VerifyResult:
    summary: dict
    verdict: Verdict
    report_dir: str

    @property
    def exit_code(self) -> int:
        return self.verdict.exit_code


def _read_mapping(loc: RunLocation, name: str, parse, bad: type[Exception], what: str,
                  notes: list[str]) -> dict | None:
    """RUN_DIR/<name> parsed as a mapping, or None with a note saying why."""
    text = loc.read_text(name)
    if text is None:
        notes.append(f"no {name}: {what}")
        return None
    try:
        doc = parse(text)
    except bad as e:
        notes.append(f"{name} is not valid {name.rsplit('.', 1)[-1].upper()} ({e}); ignored")
        return None
    if not isinstance(doc, dict):
        notes.append(f"{name} is not a mapping; ignored")
        return None
    return doc


def read_config(loc: RunLocation) -> RunConfig:
    cfg = RunConfig(None, None)
    cfg.scenario = _read_mapping(loc, "scenario.yaml", yaml.safe_load, yaml.YAMLError,
                                 "the run's configuration is unknown", cfg.notes)
    cfg.manifest = _read_mapping(loc, "manifest.json", json.loads, ValueError,
                                 "versions and cluster spec unknown", cfg.notes)
    return cfg


def resolve_expectations(expect: str | ExpectationSet | None, cfg: RunConfig) -> ExpectationSet:
    if isinstance(expect, ExpectationSet):
        return expect
    if expect is not None:
        p = Path(expect)
        if not p.is_file():
            raise HarnessError(f"--expect {expect}: no such file")
        return load_expectations(p.read_text(), str(p))
    if cfg.scenario:
        for key in ("expectations", "expect"):
            if key in cfg.scenario:
                doc = cfg.scenario[key]
                return parse_document(doc, f"scenario.yaml: {key}")
    return load_expectations(None, "defaults")


def _clean(x: Any) -> Any:
    """JSON-safe: no NaN/inf (→ null), tuples → lists."""
    if isinstance(x, float) and (math.isnan(x) or math.isinf(x)):
        return None
    if isinstance(x, dict):
        return {str(k): _clean(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [_clean(v) for v in x]
    return x


def verify_run(run_dir: str, spark_master: str | None = None,
               expect: str | ExpectationSet | None = None, *, spark=None,
               unavailability_threshold_s: float | None = None,
               write_html: bool = True) -> VerifyResult:
    t0 = time.monotonic()
    loc = RunLocation.of(run_dir)
    if not loc.is_dir():
        raise HarnessError(f"{run_dir}: no such run directory")
    cfg = read_config(loc)
    exps = resolve_expectations(expect, cfg)
    facts, fact_sources = derive_facts(cfg.scenario)
    for k, v in exps.facts:
        facts[k], fact_sources[k] = v, f"{exps.source}: facts.{k}"
    if any(k in ("acks_all", "min_isr_2", "clean_elections") for k, _ in exps.facts) \
            and not any(k == "durable" for k, _ in exps.facts):
        facts["durable"] = derive_durable(facts)
    threshold = (unavailability_threshold_s if unavailability_threshold_s is not None
                 else _threshold_from(cfg))

    summary: dict[str, Any] = {
        "run_id": os.path.basename(loc.base.rstrip("/")),
        "counts": {}, "anomalies": {}, "metrics": {},
        "config": {"scenario_present": cfg.scenario is not None,
                   "manifest_present": cfg.manifest is not None,
                   "facts": facts, "fact_sources": fact_sources,
                   "expectations_from": exps.source,
                   "unavailability_threshold_s": threshold},
        "notes": list(cfg.notes),
    }
    samples: dict = {}
    owns_session = False
    try:
        history = check_files(loc)
        summary["notes"] += history.notes
        # enumerated values, counts and names: a few dictionary-encoded columns read by
        # pyarrow, so a malformed history is refused before Spark starts
        t_scan = time.monotonic()
        scanned = check_values(loc, history)
        summary["step_seconds"] = {"validate": round(time.monotonic() - t_scan, 3)}
        from spark_reports.session import spark_session
        if spark is None:
            spark, owns_session = spark_session(spark_master)
            spark.conf.set("spark.sql.shuffle.partitions", str(_shuffle_partitions(loc, history)))
        verdict, samples = _reconcile(spark, loc, history, scanned, summary, exps, facts,
                                      fact_sources, threshold)
    except HistoryInvalid as e:
        verdict = unknown(str(e))
    finally:
        if owns_session:
            spark.stop()
    summary["verdict"] = verdict.to_dict()
    summary["timings"] = {"verify_seconds": round(time.monotonic() - t0, 3)}
    summary["generated_at"] = datetime.now(timezone.utc).isoformat(timespec="seconds")
    summary = _clean(summary)
    _write_outputs(loc, summary, verdict, cfg, samples, write_html)
    return VerifyResult(summary, verdict, loc.path("report"))


def _shuffle_partitions(loc: RunLocation, history) -> int:
    """About one shuffle partition per 32 MiB of input (AQE coalesces small ones)."""
    files = history.tables["produced"].files + history.tables["consumed"].files
    size = sum(i.size or 0 for i in loc.fs.get_file_info(files))
    return max(4, min(800, size // (32 << 20)))


def derive_durable(facts: dict) -> bool | None:
    parts = [facts.get("acks_all"), facts.get("min_isr_2"), facts.get("clean_elections")]
    if any(p is False for p in parts):
        return False
    return True if all(p is True for p in parts) else None


def _threshold_from(cfg: RunConfig) -> float:
    from spark_reports.metrics import DEFAULT_UNAVAILABILITY_THRESHOLD_S
    for path in (("verify", "unavailability_threshold_s"), ("unavailability_threshold_s",)):
        d: Any = cfg.scenario or {}
        for p in path:
            d = d.get(p) if isinstance(d, dict) else None
        if isinstance(d, (int, float)) and d > 0:
            return float(d)
    return DEFAULT_UNAVAILABILITY_THRESHOLD_S


class _Steps:
    """Seconds per step, kept in summary["timings"] (for benchmarks and slow runs)."""

    def __init__(self, into: dict):
        self.into, self.t = into, time.monotonic()

    def __call__(self, name: str) -> None:
        now = time.monotonic()
        self.into[name] = round(now - self.t, 3)
        self.t = now


def _reconcile(spark, loc, history, scanned, summary, exps, facts, fact_sources, threshold):
    from spark_reports import metrics as M
    from spark_reports.anomalies import anomaly_frames, write_anomalies
    from spark_reports import position_path
    from spark_reports.reconcile import Scratch, build_views
    from spark_reports.tables import read_tables

    step = _Steps(summary.setdefault("step_seconds", {}))
    frames = read_tables(spark, loc, history)
    produced, consumed = frames["produced"], frames["consumed"]
    if scanned.run_id is not None:
        summary["run_id"] = scanned.run_id
    summary["config"]["spark"] = {
        "version": spark.version, "master": spark.sparkContext.master,
        "driver_java": spark.sparkContext._jvm.java.lang.System.getProperty("java.version")}
    counts = scanned.counts
    cat = position_path.catalog_from(scanned)
    if cat.topics is None:
        summary["notes"].append("more than 127 topics, or partitions/offsets beyond the packed "
                                "position key: positions computed on the slower struct path")
    elif not cat.fits:
        summary["notes"].append(f"more than {position_path.MAX_PRODUCERS} producers or "
                                f"{position_path.MAX_GROUPS} consumer groups, or a seq beyond "
                                f"{position_path.MAX_SEQ}: views computed on the slower "
                                "general path")
    scratch = Scratch(spark, loc)

    def materialize(name, df, observe=None, keep=None):
        out = scratch.materialize(name, df, observe, keep)
        step(f"view.{name}")
        return out

    # The metrics read only the records view: they run in a thread of their own as
    # soon as it is written, beside the anomaly rules' many small jobs, which leave
    # a core idle at times (1.73-1.83 cores used on average before, 1.88 with it).
    metrics_job: list[_Background] = []
    background: list[_Background] = []

    def start_metrics(inputs, sizes):
        metrics_job.append(_Background(spark, "harness-metrics", lambda: _metrics(
            spark, inputs, frames["events"], consumed, sizes["run_end_us"], scanned, threshold)))
        background.append(metrics_job[-1])

    def identity_holds(check: _Background) -> bool:
        """The position path names records by producer and seq: it holds when every
        produced record_id is `<producer>-<seq>` and none repeats (else the history is
        malformed)."""
        ident = check.result()
        step("identity_wait")
        if ident["nonconforming"]:
            summary["notes"].append(f"{ident['nonconforming']} produced record_id(s) are not "
                                    "'<producer>-<seq>': views computed on the slower general "
                                    "path")
            return False
        if ident["repeated"]:
            raise HistoryInvalid([
                f"{loc.display(loc.path('history', 'produced'))}: column 'record_id' is not "
                f"unique: {ident['repeated']} row(s) repeat the record_id of another row "
                "(each record the harness sends gets one produced row)"])
        return True

    try:
        views = None
        if cat.fits:
            # a small job, beside the big aggregation (it fills the cores' idle moments)
            check = _Background(spark, "harness-identity",
                                lambda: position_path.identity_check(produced, cat))
            background.append(check)
            views = position_path.build_views(produced, consumed, frames["commits"], cat,
                                              materialize, on_metric_inputs=start_metrics,
                                              trusted=lambda: identity_holds(check))
        if views is None:
            views = build_views(produced, consumed, frames["commits"], cat.topics, materialize)
            start_metrics(M.metric_inputs(views.records, sorted(scanned.topics)), views.sizes)
        result = write_anomalies(spark, anomaly_frames(views, consumed, materialize,
                                                       scanned.read_committed_groups), loc, step)
        summary["counts"] = counts
        summary["anomalies"] = {k: result.counts[k] for k in KINDS}
        m = metrics_job.pop().result()
        step("metrics_wait")
    finally:
        for job in background:      # the anomaly rules failed: stop the others first
            job.cancel()
        scratch.remove()
    summary["step_seconds"].update({f"metrics.{k}": v for k, v in m["steps"].items()})
    tl, per_sec, unavail, recov = m["timeline"], m["per_second"], m["unavailability"], m["recovery"]
    summary["notes"] += tl.notes
    run_start, run_end = views.sizes["run_start_us"], views.sizes["run_end_us"]
    all_parts = scanned.partitions
    active = [s for s in per_sec if s["acked"] or s["sent"]]
    summary["metrics"] = {
        **m["latencies"],
        "unavailability": unavail,
        "max_unavailability_s": max((w["seconds"] for w in unavail), default=0.0),
        "recovery": recov,
        "max_recovery_s": (None if any(r["seconds"] is None for r in recov)
                           else max((r["seconds"] for r in recov), default=0.0)),
        "fault_windows": [{"fault_id": f.fault_id, "name": f.name, "target": f.target,
                           "start_us": f.start_us, "end_us": f.end_us, "healed": f.healed,
                           **m["fault_latencies"].get(f.fault_id, {})} for f in tl.faults],
        "throughput": {
            "seconds_active": len(active),
            "sent_per_s_mean": (sum(s["sent"] for s in active) / len(active)) if active else 0.0,
            "acked_per_s_mean": (sum(s["acked"] for s in active) / len(active)) if active else 0.0,
            "acked_per_s_max": max((s["acked"] for s in per_sec), default=0),
        },
        "per_second": per_sec,
        "run_start_us": run_start, "run_end_us": run_end,
        "partitions": [f"{t}-{p}" for t, p in all_parts],
    }
    summary["timeline"] = {
        "phases": [{"ts_us": ts, "name": n} for ts, n in tl.phases],
        "observations": [{"ts_us": o.ts_us, "name": o.name, "target": o.target,
                          "topic": o.topic, "partition": o.partition, "leader": o.leader,
                          "isr": list(o.isr) if o.isr is not None else None}
                         for o in tl.observations],
    }
    judged = judge(summary, exps, facts, fact_sources)
    if counts["consumed_drain"] == 0:
        verdict = unknown("no consumed rows with phase = 'drain': without the final drain "
                          "lost, overwritten and skipped cannot be judged (the workload must "
                          "read every partition from the earliest offset after healing)",
                          judged.checks)
    else:
        verdict = judged
    return verdict, {"anomalies": result.samples, "columns": result.columns}


def _metrics(spark, inputs, events, consumed, run_end, scanned, threshold) -> dict:
    """Every metric (spark_reports/metrics.py) from the records view's metric inputs,
    with the seconds each step took."""
    from spark_reports import metrics as M
    from spark_reports.timeline import parse_events

    steps: dict = {}
    step = _Steps(steps)
    tl = parse_events([r.asDict() for r in events.select(
        "ts_us", "kind", "name", "target", "detail").collect()], run_end)
    step("events")
    topics, all_parts = sorted(scanned.topics), scanned.partitions
    touched = M.touched_by_fault(tl, all_parts)
    hist = M.histograms(inputs, tl, int(threshold * 1_000_000), {
        i: [M.tp_key(topics, t, p) for t, p in parts] for i, (parts, _) in touched.items()})
    out = {"timeline": tl, "latencies": M.latencies(hist),
           "fault_latencies": M.fault_latencies(hist, tl)}
    step("latency")
    out["per_second"] = M.per_second(hist, consumed)
    step("per_second")
    out["unavailability"] = M.unavailability(spark, inputs, threshold, run_end, hist, all_parts,
                                             topics)
    step("unavailability")
    out["recovery"] = M.recovery(tl, touched, hist, topics)
    step("recovery")
    return {**out, "steps": steps}


class _Background:
    """fn() in a thread of its own, its Spark jobs tagged so they can be cancelled.
    PySpark pins each Python thread to a JVM thread, so the tag set in the thread
    marks that thread's jobs only."""

    def __init__(self, spark, tag: str, fn):
        import threading

        self.spark, self.tag, self.done = spark, tag, threading.Event()
        self.value: Any = None
        self.error: BaseException | None = None

        def run():
            try:
                spark.sparkContext.addJobTag(tag)
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
            self.spark.sparkContext.cancelJobsWithTag(self.tag)
            self.done.wait(0.2)


def _write_outputs(loc: RunLocation, summary: dict, verdict: Verdict, cfg: RunConfig,
                   samples: dict, write_html: bool) -> None:
    from spark_reports.junit import junit_xml

    loc.write_text(json.dumps(summary, indent=2, sort_keys=False, default=str) + "\n",
                   "report", "summary.json")
    loc.write_text(junit_xml(str(summary.get("run_id")), verdict,
                             summary["timings"]["verify_seconds"]), "report", "junit.xml")
    if not write_html:
        return
    from spark_reports.report_html import render_report
    try:
        page = render_report(summary, cfg.scenario, cfg.manifest, samples)
    except Exception:  # noqa: BLE001 - the verdict must not be lost to a plotting bug
        page = ("<!doctype html><meta charset='utf-8'><title>harness report</title>"
                "<h1>report could not be rendered</h1><pre>"
                + traceback.format_exc().replace("&", "&amp;").replace("<", "&lt;")
                + "</pre><pre>" + json.dumps(summary, indent=2, default=str)
                .replace("&", "&amp;").replace("<", "&lt;") + "</pre>")
    loc.write_text(page, "report", "index.html")
