"""`harness report RUN_DIR`: render report/index.html again from what verify stored
(summary.json, the anomaly rows, scenario.yaml, manifest.json); no Spark."""
from __future__ import annotations

import json
from pathlib import Path

import pyarrow.dataset as ds
import yaml

from core.errors import HarnessError
from faults.catalog import fault_colours
from spark_reports.report_html import render_report
from spark_reports.summary import Summary

SAMPLE_ROWS = 20


def _samples(report: Path) -> dict:
    anomalies, columns = {}, {}
    for kind_dir in sorted((report / "anomalies").glob("*")):
        files = sorted(p for p in kind_dir.glob("*.parquet") if not p.name.startswith("."))
        if not files:
            continue
        table = ds.dataset([str(f) for f in files]).head(SAMPLE_ROWS)
        anomalies[kind_dir.name] = table.to_pylist()
        columns[kind_dir.name] = table.column_names
    return {"anomalies": anomalies, "columns": columns}


def _read(path: Path, parse):
    try:
        return parse(path.read_text())
    except (OSError, ValueError, yaml.YAMLError):
        return None


def rerender(run_dir: str) -> Path:
    run = Path(run_dir)
    report = run / "report"
    summary = _read(report / "summary.json", Summary.from_json)
    if summary is None:
        raise HarnessError(f"{run_dir}: no report/summary.json "
                           f"(fix: harness verify {run_dir} first)")
    page = render_report(summary, _read(run / "scenario.yaml", yaml.safe_load),
                         _read(run / "manifest.json", json.loads), _samples(report),
                         fault_colours=fault_colours())
    out = report / "index.html"
    out.write_text(page)
    return out
