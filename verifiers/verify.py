"""verify_run: a stored run history and its Judgement in; report/, a verdict out.

`harness run` calls `verify_run` at the end of every run with the judgement built
from its scenario model (harness/run/judge.py); `harness verify RUN_DIR` builds it
from the run's stored scenario.yaml, read once. The reconciling itself is the
pipeline's (spark_reports/pipeline.py: its one entry point); this module judges the
summary against the expectations and writes junit.xml beside it.

The verdict is "unknown" (exit 2) when the history is malformed or has no `drain`
phase; a summary, junit.xml and index.html are still written then, saying why.
Read from RUN_DIR beside the history: manifest.json, shown in the report as is
(absent is fine, and the report says so).
"""
from __future__ import annotations

import json
import os
from dataclasses import dataclass
from typing import Any

from core.errors import HarnessError
from families import FAMILIES
from faults.catalog import fault_colours
from spark_reports import pipeline
from spark_reports.pipeline import RunLocation, Summary
from verifiers.judgement import Judgement
from verifiers.junit import verdict_junit
from verifiers.verdict import Verdict, judge, unknown


@dataclass
class VerifyResult:
    summary: Summary
    verdict: Verdict
    report_dir: str

    @property
    def exit_code(self) -> int:
        return self.verdict.exit_code


def verify_run(run_dir: str, judgement: Judgement | None = None, *, spark=None,
               spark_master: str | None = None) -> VerifyResult:
    """Reconcile RUN_DIR's history, judge it by `judgement` (None: no scenario model,
    the facts unknown, the default expectations, every family checked)."""
    j = judgement or Judgement.without_model("unknown: verified without the run's scenario model")
    loc = RunLocation.of(run_dir)
    if not loc.is_dir():
        raise HarnessError(f"{run_dir}: no such run directory")
    manifest, notes = _read_manifest(loc)
    summary: dict[str, Any] = {
        "run_id": os.path.basename(loc.base.rstrip("/")),
        "counts": {}, "anomalies": {}, "metrics": {},
        "config": {"scenario_present": j.scenario_doc is not None,
                   "manifest_present": manifest is not None,
                   "facts": dict(j.facts), "fact_sources": dict(j.fact_sources),
                   "expectations_from": j.expectations.source,
                   "unavailability_threshold_s": j.threshold_s},
        "notes": [*j.notes, *notes],
    }

    expectations = j.expectations.for_families(j.families)

    def judged(s: dict, why_unknown: str | None) -> Verdict:
        v = judge(s, expectations, j.facts, j.fact_sources) if s.get("counts") else None
        if why_unknown is not None:
            return unknown(why_unknown, v.checks if v is not None else ())
        return v

    families = tuple(f for f in FAMILIES if f.name in j.families)
    done = pipeline.reconcile(run_dir, summary, families, j.threshold_s, judged, spark=spark,
                              spark_master=spark_master, scenario_doc=j.scenario_doc,
                              manifest=manifest, write_html=j.html,
                              fault_colours=fault_colours(), load_plans=j.load_plans)
    loc.write_text(verdict_junit(str(done.summary.run_id), done.verdict,
                                 done.summary.verify_seconds), "report", "junit.xml")
    return VerifyResult(done.summary, done.verdict, done.report_dir)


def _read_manifest(loc: RunLocation) -> tuple[dict | None, list[str]]:
    text = loc.read_text("manifest.json")
    if text is None:
        return None, ["no manifest.json: versions and cluster spec unknown"]
    try:
        doc = json.loads(text)
    except ValueError as e:
        return None, [f"manifest.json is not valid JSON ({e}); ignored"]
    if not isinstance(doc, dict):
        return None, ["manifest.json is not a mapping; ignored"]
    return doc, []
