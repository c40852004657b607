"""`harness report --index DIR`: one page over every run below DIR (runs/, suites/,
compares/, a nightly history): per scenario, the trend over time of the anomaly
counts, the longest recovery and the p99 ack latency, each point linked to its run.

A run is any directory with manifest.json and report/summary.json; its time is the
manifest's start. The plots are SVG inlined in the page, so each point is a link
(matplotlib writes an artist's url into the SVG) and the page stays one file.
"""
from __future__ import annotations

import io
import json
import os
from collections import defaultdict
from datetime import UTC, datetime
from html import escape
from pathlib import Path

from core.errors import HarnessError
from spark_reports.summary import Summary

STYLE = ("body{font-family:sans-serif;margin:2em}table{border-collapse:collapse;margin-bottom:2em}"
         "td,th{border:1px solid #ccc;padding:3px 6px;font-size:85%}.failed{background:#fce8e6}"
         ".passed{background:#e6f4ea}.unknown{background:#fef7e0}")


def find_runs(root: Path) -> list[dict]:
    """Every judged run below root, oldest first."""
    runs = []
    for summary_path in sorted(root.rglob("report/summary.json")):
        run_dir = summary_path.parent.parent
        try:
            manifest = json.loads((run_dir / "manifest.json").read_text())
            summary = Summary.from_json(summary_path.read_text())
        except (OSError, ValueError, TypeError):
            continue                        # a half-written run: not a point on a trend
        metrics, verdict = summary.metrics, summary.verdict
        runs.append({"run_dir": run_dir, "scenario": str(manifest.get("scenario") or "?"),
                     "start_us": manifest.get("start_us") or 0, "kafka": manifest.get("kafka"),
                     "anomalies": {k: n for k, n in summary.anomalies.items() if n},
                     "max_recovery_s": metrics.get("max_recovery_s"),
                     "ack_p99_ms": (metrics.get("ack_latency_ms") or {}).get("p99"),
                     "status": "passed" if verdict.get("passed") else
                               str(verdict.get("status") or "failed")})
    return sorted(runs, key=lambda r: r["start_us"])


def write_index(root: Path) -> Path:
    root = Path(root)
    if not root.is_dir():
        raise HarnessError(f"report --index {root}: not a directory (fix: give runs/, suites/ or compares/)")
    runs = find_runs(root)
    if not runs:
        raise HarnessError(f"report --index {root}: no run with report/summary.json below it "
                           "(fix: point at a folder of run, suite or compare dirs)")
    by_scenario: dict[str, list[dict]] = defaultdict(list)
    for r in runs:
        by_scenario[r["scenario"]].append(r)
    parts = [f"<!doctype html><meta charset='utf-8'><title>harness index {escape(str(root))}</title>",
             f"<style>{STYLE}</style><h1>{len(runs)} runs below {escape(str(root))}</h1><ul>"]
    parts += [f"<li><a href='#{escape(s)}'>{escape(s)}</a>: {len(rs)} runs</li>" for s, rs in by_scenario.items()]
    parts.append("</ul>")
    for scenario, rs in by_scenario.items():
        parts.append(f"<h2 id='{escape(scenario)}'>{escape(scenario)}</h2>")
        parts.append(_svg(root, rs))
        parts.append(_table(root, rs))
    out = root / "index.html"
    out.write_text("".join(parts))
    return out


def _link(root: Path, run: dict) -> str:
    return os.path.relpath(run["run_dir"] / "report" / "index.html", root)


def _when(run: dict) -> datetime:
    return datetime.fromtimestamp(run["start_us"] / 1e6, tz=UTC)


def _svg(root: Path, runs: list[dict]) -> str:
    # matplotlib: only when a page is drawn
    import matplotlib
    matplotlib.use("Agg")            # no display on a CI runner
    import matplotlib.pyplot as plt
    fig, axes = plt.subplots(1, 3, figsize=(13, 3.2))
    kinds = sorted({k for r in runs for k in r["anomalies"]})
    panels = [(axes[0], "anomalies (records)", [(k, lambda r, k=k: r["anomalies"].get(k, 0)) for k in kinds]
               or [("none", lambda r: 0)]),
              (axes[1], "longest recovery (s)", [("max recovery", lambda r: r["max_recovery_s"])]),
              (axes[2], "p99 ack latency (ms)", [("p99", lambda r: r["ack_p99_ms"])])]
    for ax, title, series in panels:
        for label, value in series:
            points = [(_when(r), value(r), _link(root, r)) for r in runs if value(r) is not None]
            if not points:
                continue
            ax.plot([p[0] for p in points], [p[1] for p in points], lw=0.8, alpha=0.6)
            dots = ax.scatter([p[0] for p in points], [p[1] for p in points], s=18, label=label)
            dots.set_urls([p[2] for p in points])       # each point links to its run's report
        ax.set_title(title, fontsize=9)
        ax.tick_params(axis="x", labelrotation=30, labelsize=7)
        if len(series) > 1:
            ax.legend(fontsize=7)
    fig.tight_layout()
    buf = io.StringIO()
    fig.savefig(buf, format="svg")
    plt.close(fig)
    svg = buf.getvalue()
    return svg[svg.index("<svg"):]                # inline: drop the XML prologue


def _table(root: Path, runs: list[dict]) -> str:
    rows = "".join(
        f"<tr class='{escape(r['status'])}'><td><a href='{escape(_link(root, r))}'>"
        f"{escape(_when(r).strftime('%Y-%m-%d %H:%M:%S'))}</a></td><td>{escape(str(r['kafka']))}</td>"
        f"<td>{escape(r['status'])}</td>"
        f"<td>{escape(', '.join(f'{k} {n}' for k, n in r['anomalies'].items()) or 'none')}</td>"
        f"<td>{_num(r['max_recovery_s'])}</td><td>{_num(r['ack_p99_ms'])}</td></tr>"
        for r in reversed(runs))
    return ("<table><tr><th>run (UTC)</th><th>kafka</th><th>verdict</th><th>anomalies</th>"
            f"<th>longest recovery s</th><th>p99 ack ms</th></tr>{rows}</table>")


def _num(v) -> str:
    return "-" if v is None else f"{v:.1f}"
