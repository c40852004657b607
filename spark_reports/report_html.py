"""report/index.html: one self-contained page (plots embedded as base64 PNG)."""
from __future__ import annotations

import base64
import json
from datetime import UTC, datetime
from html import escape
from typing import Any

import yaml

from spark_reports import plots

RULES = {
    "lost": "acked record never consumed in any phase",
    "overwritten": "acked at (partition, offset) but another record was consumed at that offset",
    "duplicate": "one record_id consumed at two or more distinct positions",
    "reordered": "position offset lower than an earlier seq's on the same producer and partition",
    "unexpected": "consumed record_id never sent, or failed outside a transaction",
    "divergent": "different record_ids seen at the same (topic, partition, offset)",
    "aborted_read": "read_committed consumer saw a record of an aborted transaction",
    "skipped": "group committed past an offset the drain saw but the group never received",
    "redelivered": "extra deliveries of one position to one group in run (counted, not a fault)",
    "recovered": "indeterminate record that was consumed (counted, not a fault)",
    "poll_skip": "a consumer jumped over a record it could read, inside one assignment",
    "nonmonotonic_poll": "a consumer went back to an offset, inside one assignment",
}

# What happened, in words: "<n> <what> <topic-partition>" (explain()).
WORDS = {
    "lost": "acknowledged records of {tp} were lost",
    "overwritten": "acknowledged records of {tp} were overwritten by other records",
    "duplicate": "records of {tp} were written at two or more offsets",
    "reordered": "records of {tp} sit below an earlier record of their producer",
    "unexpected": "records read from {tp} were never sent, or had failed",
    "divergent": "offsets of {tp} held different records for different consumers",
    "aborted_read": "records of aborted transactions on {tp} reached a read_committed consumer",
    "skipped": "offsets of {tp} were committed past by a group that never received them",
    "redelivered": "extra deliveries of {tp} went to a group that had them already",
    "recovered": "records of {tp} whose outcome was unknown are in the log",
    "poll_skip": "offsets of {tp} were jumped over by a consumer inside one assignment",
    "nonmonotonic_poll": "deliveries of {tp} went back to an earlier offset inside one assignment",
}

CSS = """
body{font-family:-apple-system,Segoe UI,Helvetica,Arial,sans-serif;margin:0 2em 3em;color:#222}
.banner{margin:1em 0;padding:1em 1.4em;border-radius:6px;color:#fff}
.banner h1{margin:0 0 .3em;font-size:1.6em}.passed{background:#1b7837}.failed{background:#b2182b}
.unknown{background:#8c6d1f}.banner ul{margin:.3em 0 0 1.2em;padding:0}
table{border-collapse:collapse;margin:.5em 0 1em;font-size:.85em}
td,th{border:1px solid #ccc;padding:.25em .6em;text-align:left;vertical-align:top}
th{background:#f0f0f0}td.num{text-align:right;font-variant-numeric:tabular-nums}
tr.bad td{background:#fde0dd}h2{border-bottom:1px solid #ddd;padding-bottom:.2em;margin-top:1.6em}
details{margin:.3em 0}pre{background:#f7f7f7;padding:.6em;overflow:auto;font-size:.8em}
.muted{color:#777}img{max-width:100%}
"""

EXPECTED_BAD = ("lost", "overwritten", "duplicate", "reordered", "unexpected", "divergent",
                "aborted_read", "skipped", "poll_skip", "nonmonotonic_poll")


def _img(png: bytes | None, alt: str) -> str:
    if not png:
        return f"<p class='muted'>{escape(alt)}: no data</p>"
    return f"<img alt='{escape(alt)}' src='data:image/png;base64,{base64.b64encode(png).decode()}'>"


def _fmt(v: Any) -> str:
    if v is None:
        return "–"
    if isinstance(v, float):
        return f"{v:,.3f}".rstrip("0").rstrip(".")
    if isinstance(v, int) and not isinstance(v, bool):
        return f"{v:,}"
    return str(v)


def _ts(us: int | None) -> str:
    if us is None:
        return "–"
    return datetime.fromtimestamp(us / 1e6, UTC).strftime("%H:%M:%S.%f")[:-3]


def when(us: int | None, t0_us: int) -> str:
    """A time as people read it: seconds since the run started, and UTC wall clock."""
    if us is None:
        return "–"
    return f"+{(us - t0_us) / 1e6:.3f} s ({_ts(us)} UTC)"


def _count(n: int) -> str:
    return f"{n:,}".replace(",", "\u2009")      # thin spaces: 14 840


def explain(kind: str, g: dict, faults: dict[str, str]) -> str:
    """One group of a kind's rows (anomaly_output.explanations) in words."""
    tp = f"{g['topic']}-{g['partition']}" if g.get("partition") is not None else str(g["topic"])
    text = f"{_count(g['count'])} {WORDS[kind].format(tp=tp)}"
    if g.get("first_ack_us") is None:
        return text + "."
    text += "; all were acknowledged"
    if g.get("leader"):
        text += f" by {g['leader']}"
    if g["faults"]:
        names = [f"{f} ({faults[f]})" if f in faults else f for f in g["faults"]]
        return text + f" while {' and '.join(names)} {'was' if len(names) == 1 else 'were'} active."
    return text + " while no fault was active."


def _table(headers: list[str], rows: list[list[Any]], bad: list[bool] | None = None) -> str:
    out = ["<table><tr>" + "".join(f"<th>{escape(h)}</th>" for h in headers) + "</tr>"]
    for i, row in enumerate(rows):
        cls = " class='bad'" if bad and bad[i] else ""
        cells = "".join(
            f"<td class='num'>{escape(_fmt(c))}</td>" if isinstance(c, (int, float))
            and not isinstance(c, bool) else f"<td>{escape(_fmt(c))}</td>" for c in row)
        out.append(f"<tr{cls}>{cells}</tr>")
    return "".join(out) + "</table>"


def _banner(summary: dict) -> str:
    v = summary.get("verdict", {})
    status = v.get("status", "unknown")
    items = list(v.get("failures") or [])
    if status == "unknown" and v.get("reason"):
        items.insert(0, v["reason"])
    lis = "".join(f"<li>{escape(x)}</li>" for x in items)
    nj = v.get("not_judged") or []
    njs = ("<details><summary>" + f"{len(nj)} expectation(s) not judged</summary><ul>"
           + "".join(f"<li>{escape(x)}</li>" for x in nj) + "</ul></details>") if nj else ""
    return (f"<div class='banner {escape(status)}'><h1>{escape(status.upper())}: run "
            f"{escape(str(summary.get('run_id')))}</h1>"
            + (f"<ul>{lis}</ul>" if lis else "") + njs + "</div>")


def _cell(col: str, v: Any, t0_us: int) -> Any:
    """A sample cell: times readable, lists as JSON."""
    if col.endswith("_us") and isinstance(v, int):
        return when(v, t0_us)
    return json.dumps(v) if isinstance(v, (list, dict)) else v


def _anomalies(summary: dict, samples: dict, t0_us: int) -> str:
    an = summary.get("anomalies") or {}
    if not an:
        return "<p class='muted'>not computed</p>"
    rows = [[k, an.get(k), RULES[k]] for k in RULES]
    html = [_table(["anomaly", "count", "rule"], rows,
                   [k in EXPECTED_BAD and (an.get(k) or 0) > 0 for k in RULES])]
    fault_names = {f["fault_id"]: f["name"]
                   for f in (summary.get("metrics") or {}).get("fault_windows") or []}
    said = [f"<li>{escape(explain(k, g, fault_names))}</li>"
            for k in RULES for g in (summary.get("anomaly_explanations") or {}).get(k, [])]
    if said:
        html.append("<h3>What happened</h3><ul>" + "".join(said) + "</ul>")
    for k in RULES:
        first = (samples.get("anomalies") or {}).get(k) or []
        if not first:
            continue
        cols = (samples.get("columns") or {}).get(k) or list(first[0])
        html.append(f"<details open><summary><b>{escape(k)}</b>: first {len(first)} row(s) "
                    f"(all in report/anomalies/{escape(k)}/)</summary>"
                    + _table(cols, [[_cell(c, r.get(c), t0_us) for c in cols] for r in first])
                    + "</details>")
    return "".join(html)


def _latency_rows(metrics: dict) -> str:
    rows = []
    for label, m in (("ack, overall", metrics.get("ack_latency_ms")),
                     ("end-to-end, overall", metrics.get("e2e_latency_ms"))):
        if m:
            rows.append([label, m.get("n"), m.get("p50"), m.get("p99"), m.get("p999"), m.get("max")])
    for f in metrics.get("fault_windows", []):
        for kind in ("ack", "e2e"):
            m = f.get(f"{kind}_latency_ms") or {}
            rows.append([f"{kind} during {f['name']} ({f['fault_id']})", m.get("n"), m.get("p50"),
                         m.get("p99"), m.get("p999"), m.get("max")])
    return _table(["latency (ms)", "records", "p50", "p99", "p99.9", "max"], rows)


def render_report(summary: dict, scenario: dict | None, manifest: dict | None,
                  samples: dict) -> str:
    m = summary.get("metrics") or {}
    per_sec = m.get("per_second") or []
    t0 = m.get("run_start_us") or (per_sec[0]["second"] * 1_000_000 if per_sec else 0)
    counts = summary.get("counts") or {}
    parts = [f"<!doctype html><html><head><meta charset='utf-8'>"
             f"<title>harness report {escape(str(summary.get('run_id')))}</title>"
             f"<style>{CSS}</style></head><body>", _banner(summary)]
    parts.append(f"<p>Times: seconds since the run started (+s; first send "
                 f"{escape(_ts(t0))} UTC) and UTC wall clock.</p>" if t0 else "")
    parts.append("<h2>Counts</h2>")
    parts.append(_table(list(counts), [list(counts.values())]) if counts
                 else "<p class='muted'>not computed</p>")
    parts.append("<h2>Anomalies</h2>" + _anomalies(summary, samples, t0))
    if per_sec:
        parts.append(_throughput(m, t0))
    if m:
        parts.append(_faults_and_recovery(summary, m, t0))
    parts.append(_configuration(summary, scenario, manifest))
    notes = summary.get("notes") or []
    if notes:
        parts.append("<h2>Notes</h2><ul>" + "".join(f"<li>{escape(n)}</li>" for n in notes) + "</ul>")
    parts.append(f"<p class='muted'>generated {escape(str(summary.get('generated_at')))} in "
                 f"{_fmt(summary.get('verify_seconds'))} s</p></body></html>")
    return "".join(parts)


def _throughput(m: dict, t0: int) -> str:
    faults, per_sec = m.get("fault_windows") or [], m["per_second"]
    tp = m.get("throughput") or {}
    return ("<h2>Throughput, latency and consumer lag</h2>"
            + _img(plots.throughput_png(per_sec, faults, t0), "throughput")
            + _img(plots.latency_png(per_sec, faults, t0), "ack latency")
            + _img(plots.lag_png(m.get("consumer_lag") or [], faults, t0), "consumer lag")
            + f"<p>Mean sent {_fmt(tp.get('sent_per_s_mean'))}/s, acked "
              f"{_fmt(tp.get('acked_per_s_mean'))}/s over {_fmt(tp.get('seconds_active'))} "
              f"active seconds; peak acked {_fmt(tp.get('acked_per_s_max'))}/s.</p>")


def _faults_and_recovery(summary: dict, m: dict, t0: int) -> str:
    faults = m.get("fault_windows") or []
    tl = summary.get("timeline") or {}
    marks = {k: v for k, v in (summary.get("anomaly_explanations") or {}).items()
             if k in ("lost", "overwritten")}
    out = ["<h2>Latency</h2>" + _latency_rows(m), "<h2>Leadership, ISR and unavailability</h2>",
           _img(plots.leadership_png(tl.get("observations") or [], m.get("partitions") or [],
                                     m.get("unavailability") or [], faults, t0,
                                     m.get("run_end_us") or t0, marks),
                "leader/ISR timeline")]
    un = m.get("unavailability") or []
    thr = (summary.get("config") or {}).get("unavailability_threshold_s")
    out.append(f"<p>Unavailability windows (no successful ack for more than {_fmt(thr)} s "
               f"while sends were pending; not before a partition's first ack): {len(un)}</p>")
    if un:
        out.append(_table(["partition", "from", "to", "seconds", "ended by an ack"],
                          [[f"{w['topic']}-{w['partition']}", when(w["start_us"], t0),
                            when(w["end_us"], t0), w["seconds"], w["ended_by_ack"]]
                           for w in un[:200]]))
    rec = m.get("recovery") or []
    if rec:
        out.append("<h2>Faults and recovery</h2>")
        out.append(_table(
            ["fault", "target", "injected", "healed", "recovery (s)", "after heal (s)",
             "unavailable (s)", "partitions (from)", "never recovered"],
            [[f"{r['name']} ({r['fault_id']})", r.get("target"), when(r["start_us"], t0),
              when(r["end_us"], t0) if r.get("healed") else "never", r.get("seconds"),
              r.get("after_heal_s"), r.get("unavailable_s"),
              f"{len(r['partitions'])} ({r['partitions_from']})",
              ", ".join(r.get("never_recovered") or [])] for r in rec]))
    return "".join(out)


def _configuration(summary: dict, scenario: dict | None, manifest: dict | None) -> str:
    cfg = summary.get("config") or {}
    facts, src = cfg.get("facts") or {}, cfg.get("fact_sources") or {}
    out = ["<h2>Configuration</h2>",
           _table(["fact", "value", "from"],
                  [[k, "unknown" if v is None else str(v).lower(), src.get(k)]
                   for k, v in facts.items()]),
           f"<p>Expectations from: {escape(str(cfg.get('expectations_from')))}</p>"]
    checks = (summary.get("verdict") or {}).get("checks") or []
    if checks:
        out.append(_table(["expectation", "actual", "status", "reason"],
                          [[c["expectation"], c["actual"], c["status"], c["reason"]]
                           for c in checks], [c["status"] == "failed" for c in checks]))
    for name, doc in (("scenario.yaml", scenario), ("manifest.json", manifest)):
        body = (yaml.safe_dump(doc, sort_keys=False) if name.endswith("yaml")
                else json.dumps(doc, indent=2)) if doc is not None else "absent"
        out.append(f"<details><summary>{name}</summary><pre>{escape(body)}</pre></details>")
    return "".join(out)
