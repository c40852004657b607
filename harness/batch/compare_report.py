"""A compare's outputs: compare.json, index.html (the variants side by side, the
differences that matter highlighted, the overlaid plot) and junit.xml (one
testcase per run: did it meet the scenario's expectations)."""
from __future__ import annotations

import json
from html import escape
from pathlib import Path

from harness.batch.compare import aggregate, differences, exit_code, fmt_spread
from harness.batch.compare_plot import plot, series_of
from verifiers.junit import junit_xml

STYLE = ("body{font-family:sans-serif;margin:2em}table{border-collapse:collapse;margin-bottom:1.5em}"
         "td,th{border:1px solid #ccc;padding:4px 8px;font-size:90%;text-align:right}"
         "td:first-child,th:first-child{text-align:left}.called{background:#fce8e6;font-weight:bold}"
         ".passed{background:#e6f4ea}.failed{background:#fce8e6}.unknown{background:#fef7e0}")


def build(meta: dict, rows: list[dict]) -> dict:
    """The whole compare as one document (what compare.json holds)."""
    stats = aggregate(rows)
    return {**meta, "variants": [{"variant": v, "stats": s,
                                  "runs": [r for r in rows if r["variant"] == v],
                                  "met_expectations": all(r["status"] == "passed"
                                                          for r in rows if r["variant"] == v)}
                                 for v, s in stats.items()],
            "differences": differences(stats),
            "exit_code": exit_code(rows, meta.get("planned"))}


def write_outputs(compare_dir: Path, meta: dict, rows: list[dict]) -> dict:
    doc = build(meta, rows)
    (compare_dir / "compare.json").write_text(json.dumps(doc, indent=2, default=str) + "\n")
    (compare_dir / "index.html").write_text(html(compare_dir, doc, _plot(doc)))
    (compare_dir / "junit.xml").write_text(junit(doc))
    return doc


def _plot(doc: dict) -> str | None:
    series = {v["variant"]: [series_of(Path(r["run_dir"])) for r in v["runs"]] for v in doc["variants"]}
    return plot(series)


def html(compare_dir: Path, doc: dict, image: str | None) -> str:
    title = f"compare {doc.get('scenario')}: " + " × ".join(
        f"{a['key']} ∈ {{{', '.join(a['values'])}}}" for a in doc.get("axes", []))
    parts = [f"<!doctype html><meta charset='utf-8'><title>{escape(title)}</title>",
             f"<style>{STYLE}</style><h1>{escape(title)}</h1>",
             f"<p>seed {escape(str(doc.get('seed')))}, {doc.get('repeat', 1)} run(s) per variant "
             f"(seeds seed…seed+{doc.get('repeat', 1) - 1}, the same for every variant); "
             + ("medians and [min..max] over repeats; a difference is called only when the "
                "spreads do not overlap." if doc.get("repeat", 1) > 1 else "one run per variant.")
             + "</p>", _differences_html(doc), _table_html(doc)]
    if image:
        parts.append(f"<h2>Over time</h2><img alt='throughput and p99 ack latency' src='{image}'>")
    parts.append(_runs_html(compare_dir, doc))
    return "".join(parts)


def _differences_html(doc: dict) -> str:
    if not doc["differences"]:
        return "<h2>Differences that matter</h2><p>none called.</p>"
    items = "".join(f"<li class='called'>{escape(d['metric'])}: {escape(d['kind'])} — "
                    f"{escape(d['why'])}</li>" for d in doc["differences"])
    return f"<h2>Differences that matter</h2><ul>{items}</ul>"


def _table_html(doc: dict) -> str:
    variants = doc["variants"]
    called = {(d["metric"], v) for d in doc["differences"] for v in (d["a"], d["b"])}
    metrics = list(dict.fromkeys(k for v in variants for k in v["stats"]))
    head = "<tr><th>metric</th>" + "".join(f"<th>{escape(v['variant'])}</th>" for v in variants) + "</tr>"
    verdict = "<tr><td>met expectations</td>" + "".join(
        f"<td class='{'passed' if v['met_expectations'] else 'failed'}'>"
        f"{'yes' if v['met_expectations'] else 'no'}</td>" for v in variants) + "</tr>"
    body = "".join("<tr><td>" + escape(m) + "</td>" + "".join(
        f"<td class='{'called' if (m, v['variant']) in called else ''}'>"
        f"{escape(fmt_spread(v['stats'][m]) if m in v['stats'] else '-')}</td>" for v in variants) + "</tr>"
        for m in metrics)
    return f"<h2>Side by side</h2><table>{head}{verdict}{body}</table>"


def _runs_html(compare_dir: Path, doc: dict) -> str:
    rows = []
    for v in doc["variants"]:
        for r in v["runs"]:
            try:
                rel = Path(r["run_dir"]).resolve().relative_to(compare_dir.resolve())
            except ValueError:
                rel = Path(r["run_dir"]).resolve()
            why = "; ".join(r.get("failures") or []) or (r.get("reason") or "")
            rows.append(f"<tr class='{escape(r['status'])}'><td>{escape(r['variant'])}</td>"
                        f"<td>{r['repeat']}</td><td>{r['seed']}</td><td>{escape(r['status'])}</td>"
                        f"<td>{escape(why)}</td><td><a href='{escape(str(rel))}/report/index.html'>"
                        f"report</a></td></tr>")
    return ("<h2>Runs</h2><table><tr><th>variant</th><th>repeat</th><th>seed</th><th>verdict</th>"
            f"<th>why</th><th>evidence</th></tr>{''.join(rows)}</table>")


def junit(doc: dict) -> str:
    runs = [r for v in doc["variants"] for r in v["runs"]]

    def case(r: dict) -> tuple[str, str, str]:
        name = f"{r['variant']} #{r['repeat']}"
        if r["status"] == "passed":
            return name, "passed", ""
        if r["status"] == "failed":
            return name, "failed", "; ".join(r.get("failures") or []) or "expectations violated"
        return name, "error", str(r.get("reason"))
    return junit_xml(f"harness compare {doc.get('scenario')}",
                     f"harness.batch.compare.{doc.get('scenario')}", [case(r) for r in runs])
