"""report/index.html: one self-contained page (plots embedded as base64 PNG), from the
run's typed summary (spark_reports/summary.py), at verify time or again from
summary.json (`harness report`).

It answers in the order a reader asks: did the run pass, and why (the banner names
every expectation and how it went); what each fault did, in words; what else went
wrong; then the anomalies, the plots and the tables behind them. Expected anomalies
are amber, violations red; red means nothing else on the page.
"""
from __future__ import annotations

import base64
import json
from collections.abc import Mapping
from datetime import UTC, datetime
from html import escape
from typing import Any

import yaml

from families import FAMILIES, KINDS
from families.records.send_times import unknown_in
from spark_reports import plots
from spark_reports.explain import RunFacts, count_words, explain, fault_story
from spark_reports.summary import Summary

CSS = """
body{font-family:-apple-system,Segoe UI,Helvetica,Arial,sans-serif;margin:0 auto 3em;
 padding:0 1.5em;max-width:1400px;color:#222;box-sizing:border-box;overflow-wrap:break-word}
.banner{margin:1em 0;padding:1em 1.4em;border-radius:6px;color:#fff}
.banner h1{margin:0 0 .4em;font-size:1.5em}.passed{background:#1b7837}.failed{background:#b2182b}
.unknown{background:#8c6d1f}.banner ul{margin:.3em 0 0 1.2em;padding:0}.banner li{margin:.15em 0}
.banner .times{margin:.6em 0 0;font-size:.85em;opacity:.9}
table{border-collapse:collapse;margin:.5em 0 1em;font-size:.85em;max-width:100%}
table.fit{table-layout:fixed;width:100%}
td,th{border:1px solid #ccc;padding:.25em .6em;text-align:left;vertical-align:top;
 overflow-wrap:anywhere}
th{background:#f0f0f0}td.num{text-align:right;font-variant-numeric:tabular-nums}
tr.bad td{background:#fde0dd}tr.expected td{background:#fee8c8}tr.zero td{color:#888}
h2{border-bottom:1px solid #ddd;padding-bottom:.2em;margin-top:1.6em}
details{margin:.3em 0}pre{background:#f7f7f7;padding:.6em;overflow:auto;font-size:.8em;
 white-space:pre-wrap;overflow-wrap:anywhere}
.muted{color:#777}img{max-width:100%;height:auto}
.story td:first-child{white-space:nowrap;color:#555;width:6em}
.kv{display:grid;grid-template-columns:repeat(auto-fill,minmax(14em,1fr));gap:.2em 1.2em;
 font-size:.85em;margin:.5em 0 1em}.kv span.k{color:#555}
"""
# a per-key kind's first rows said one by one (Kind.row_words)
ROWS_IN_WORDS = 10
MARKS = {"passed": "\u2713", "failed": "\u2717", "not judged": "\u2013"}


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
    """A time as people read it: seconds since the first send, and UTC wall clock."""
    if us is None:
        return "–"
    return f"+{(us - t0_us) / 1e6:.3f} s ({_ts(us)} UTC)"


def _table(headers: list[str], rows: list[list[Any]], classes: list[str] | None = None,
           fit: bool = False) -> str:
    out = [f"<table{' class=fit' if fit else ''}><tr>"
           + "".join(f"<th>{escape(h)}</th>" for h in headers) + "</tr>"]
    for i, row in enumerate(rows):
        cls = f" class='{classes[i]}'" if classes and classes[i] else ""
        cells = "".join(
            f"<td class='num'>{escape(_fmt(c))}</td>" if isinstance(c, (int, float))
            and not isinstance(c, bool) else f"<td>{escape(_fmt(c))}</td>" for c in row)
        out.append(f"<tr{cls}>{cells}</tr>")
    return "".join(out) + "</table>"


# -- the banner: the verdict and why --------------------------------------------------

def _where(summary: Summary, kind: str, most: int = 3) -> str:
    """Where a kind's rows are: its largest partitions, from the explanations."""
    per: dict[str, int] = {}
    for g in summary.anomaly_explanations.get(kind, []):
        tp = f"{g['topic']}-{g['partition']}"
        per[tp] = per.get(tp, 0) + g["count"]
    top = sorted(per.items(), key=lambda x: -x[1])[:most]
    return ", ".join(f"{tp} ({count_words(n)})" for tp, n in top)


def _check_sentence(c: dict, summary: Summary) -> str:
    """One expectation and how it went: "lost > 0 was expected: 4 841 lost on t-0 (…)",
    "lost == 0 when durable was violated: 3 lost on …", "max_unavailability_s <= 30 held
    (17.2)", or why it was not judged."""
    if c["status"] == "not judged":
        return c["reason"]
    metric, op = c["expectation"].split()[:2]
    an = summary.anomalies.get(metric)
    if an:
        where = _where(summary, metric)
        seen = f"{count_words(an)} {metric}" + (f" on {where}" if where else "")
        verb = "was violated" if c["status"] == "failed" else (
            "was expected" if op in (">", ">=", "!=") else "held")
        return f"{c['expectation']} {verb}: {seen}"
    if c["status"] == "failed":
        died = [p["text"] for p in summary.problems if p["kind"] == "workload-died"]
        why = "; ".join(died) if metric == "workload_deaths" and died else c["reason"]
        return f"{c['expectation']} was violated: {why}"
    return f"{c['expectation']} held ({_fmt(c['actual'])})"


def _headline(summary: Summary, v: dict) -> str:
    status = v.get("status", "unknown")
    checks = v.get("checks") or []
    if status == "unknown":
        return f"UNKNOWN: {v.get('reason') or 'the run could not be judged'}"
    if status == "failed":
        return "FAILED: " + "; ".join(_check_sentence(c, summary) for c in checks
                                      if c["status"] == "failed")
    expected = [c for c in checks if c["status"] == "passed"
                and summary.anomalies.get(c["expectation"].split()[0])]
    if expected:
        return "PASSED: " + "; ".join(_check_sentence(c, summary) for c in expected)
    held = sum(c["status"] == "passed" for c in checks)
    return f"PASSED: every expectation held ({held} checked)"


def _banner(summary: Summary, t0: int, run_start: int | None) -> str:
    v = summary.verdict
    status = v.get("status", "unknown")
    items = [f"<li>{MARKS.get(c['status'], '')} {escape(_check_sentence(c, summary))}</li>"
             for c in v.get("checks") or []]
    if status == "unknown" and v.get("reason"):
        items.insert(0, f"<li><pre>{escape(v['reason'])}</pre></li>")
    times = ""
    if t0:
        times = f"Times on this page: seconds since the first send (+0 = {_ts(t0)} UTC)"
        if run_start and run_start < t0:
            times += f"; the run started {(t0 - run_start) / 1e6:.1f} s before it"
        times = f"<p class='times'>{escape(times)}.</p>"
    return (f"<div class='banner {escape(status)}'><h1>{escape(_headline(summary, v))}</h1>"
            f"<div>run {escape(str(summary.run_id))}</div>"
            + (f"<ul>{''.join(items)}</ul>" if items else "") + times + "</div>")


# -- what each fault did, and what else went wrong -----------------------------------

def _faults_in_words(summary: Summary, run: RunFacts) -> str:
    m = summary.metrics
    isr = {f["fault_id"]: f for f in m.get("isr") or []}
    out = ["<h2>What each fault did</h2>"]
    recs = m.get("recovery") or []
    if not recs:
        return out[0] + "<p class='muted'>no fault was injected</p>"
    for r in recs:
        title = r.get("label") or r["name"]
        out.append(f"<h3>{escape(title)} <span class='muted'>({escape(r['fault_id'])})</span></h3>")
        lines = fault_story(r, isr.get(r["fault_id"]), summary, run)
        out.append("<table class='story'>" + "".join(
            f"<tr><td>{escape(t)}</td><td>{escape(s)}</td></tr>" for t, s in lines) + "</table>")
    return "".join(out)


def _problems(summary: Summary, t0: int) -> str:
    probs = summary.problems
    if not probs and not summary.counts:    # the history was refused: nothing was looked at
        return ""
    if not probs:
        return "<h2>What else went wrong</h2><p>Nothing: every workload ran to the end, every " \
               "fault was injected and healed as planned.</p>"
    return "<h2>What else went wrong</h2><ul>" + "".join(
        f"<li>{escape((when(p['at_us'], t0) + ': ') if p.get('at_us') else '')}"
        f"{escape(p['text'])}</li>" for p in probs) + "</ul>"


def _load(summary: Summary) -> str:
    """Each producing workload against its plan (spark_reports/load_plan.py)."""
    load = summary.load
    if not load:                            # the history was refused: no load was measured
        return ""
    head = "<h2>Load against its plan</h2>"
    if not load.get("judged"):
        return head + f"<p class='muted'>not judged: {escape(str(load.get('why')))}</p>"
    rows = load.get("workloads") or []
    short = f"{100 * rows[0]['min_fraction']:g} %" if rows else ""
    return head + _table(
        ["workload", "kind", "plan", "planned", "sent", "of plan", "first send after the "
         "workloads started (s)", "longest gap between sends (s)"],
        [[w["workload"], w["kind"], w["plan"], w.get("planned"), w["sent"],
          "–" if w.get("fraction") is None else f"{100 * w['fraction']:.1f} %",
          w.get("start_delay_s"), w.get("longest_gap_s")] for w in rows],
        ["bad" if w["short"] else "" for w in rows]) + (
        f"<p class='muted'>A workload that sent less than {short} of its plan is short "
        "(report.min_load_fraction), and fails the run (load_shortfall).</p>" if rows else "")


# -- anomalies ----------------------------------------------------------------------

def _row_class(kind, n: int, failed: set[str]) -> str:
    if not n:
        return "zero"
    if kind.name in failed:
        return "bad"
    return "expected" if kind.bad else ""


def _cell(col: str, v: Any, t0_us: int) -> Any:
    """A sample cell: times readable, lists as JSON."""
    if col.endswith("_us") and isinstance(v, int):
        return when(v, t0_us)
    return json.dumps(v) if isinstance(v, (list, dict)) else v


def _anomalies(summary: Summary, samples: dict, run: RunFacts,
               colours: Mapping[str, str] | None = None) -> str:
    """Each checked family's section: its words, its kinds and their counts, its rows in
    words, the first of its rows."""
    an = summary.anomalies
    if not an:
        return "<p class='muted'>not computed</p>"
    failed = {c["expectation"].split()[0] for c in summary.verdict.get("checks") or []
              if c["status"] == "failed"}
    html = []
    for family in FAMILIES:
        shown = [k for k in family.kinds if k.name in an]
        if shown:
            html.append(_family_section(family, shown, summary, samples, run, failed, colours))
    return "".join(html)


def _family_section(family, shown: list, summary: Summary, samples: dict, run: RunFacts,
                    failed: set[str], colours: Mapping[str, str] | None = None) -> str:
    an = summary.anomalies
    html = [f"<h3>{escape(family.title)}</h3>"]
    html += [f"<p>{escape(line)}</p>" for line in family.words(summary)]
    faults = summary.metrics.get("fault_windows") or []
    html += [_img(plots.series_png(title, ylabel, rows, keys, faults, run.t0_us,
                                   fault_colours=colours), title)
             for title, ylabel, rows, keys in family.series(summary)]
    html.append(_table(["anomaly", "count", "rule"], [[k.name, an.get(k.name), k.rule] for k in shown],
                       [_row_class(k, an.get(k.name) or 0, failed) for k in shown]))
    said = [f"<li>{escape(explain(k.name, g, run))}</li>"
            for k in shown for g in summary.anomaly_explanations.get(k.name, [])]
    said += [f"<li>{escape(k.row_words(r, run))}</li>" for k in shown if k.row_words
             for r in ((samples.get("anomalies") or {}).get(k.name) or [])[:ROWS_IN_WORDS]]
    if said:
        html.append("<h4>In words</h4><ul>" + "".join(said) + "</ul>")
    for k in shown:
        first = (samples.get("anomalies") or {}).get(k.name) or []
        if not first:
            continue
        cols = (samples.get("columns") or {}).get(k.name) or list(first[0])
        html.append(f"<details><summary><b>{escape(k.name)}</b>: first {len(first)} row(s) "
                    f"(all in report/anomalies/{escape(k.name)}/)</summary>"
                    + _table(cols, [[_cell(c, r.get(c), run.t0_us) for c in cols] for r in first],
                             fit=True) + "</details>")
    return "".join(html)


def _latency_rows(metrics: dict) -> str:
    if why := unknown_in(metrics):
        return f"<p>Latency: unknown ({escape(why)}).</p>"
    rows = []
    for label, m in (("ack, overall", metrics.get("ack_latency_ms")),
                     ("end-to-end, overall", metrics.get("e2e_latency_ms"))):
        if m:
            rows.append([label, m.get("n"), m.get("p50"), m.get("p99"), m.get("p999"), m.get("max")])
    for f in metrics.get("fault_windows", []):
        if f.get("inject_error"):       # not injected: no window to measure
            continue
        for kind in ("ack", "e2e"):
            m = f.get(f"{kind}_latency_ms") or {}
            rows.append([f"{kind} during {f.get('label') or f['name']}", m.get("n"), m.get("p50"),
                         m.get("p99"), m.get("p999"), m.get("max")])
    return _table(["latency (ms)", "records", "p50", "p99", "p99.9", "max"], rows)


def render_report(summary: Summary, scenario: dict | None, manifest: dict | None,
                  samples: dict, *, fault_colours: Mapping[str, str] | None = None) -> str:
    """The page. `fault_colours`: each fault name's plot colour (faults.catalog's
    `fault_colours()`; without it every fault band is grey)."""
    m = summary.metrics
    per_sec = m.get("per_second") or []
    t0 = m.get("run_start_us") or (per_sec[0]["second"] * 1_000_000 if per_sec else 0)
    run = RunFacts.of(summary, t0)
    parts = [f"<!doctype html><html><head><meta charset='utf-8'>"
             f"<meta name='viewport' content='width=device-width'>"
             f"<title>harness report {escape(str(summary.run_id))}</title>"
             f"<style>{CSS}</style></head><body>",
             _banner(summary, t0, (manifest or {}).get("start_us"))]
    if m:
        parts.append(_faults_in_words(summary, run))
    parts.append(_problems(summary, t0))
    parts.append(_load(summary))
    parts.append("<h2>Anomalies</h2>" + _anomalies(summary, samples, run, fault_colours))
    if per_sec:
        parts.append(_throughput(m, t0, fault_colours))
    if m:
        parts.append(_leadership_and_recovery(summary, m, t0, fault_colours))
        parts.append("<h2>Latency</h2>" + _latency_rows(m))
    parts.append(_counts(summary.counts))
    parts.append(_configuration(summary, scenario, manifest))
    notes = summary.notes
    if notes:
        parts.append("<h2>Notes</h2><ul>" + "".join(f"<li>{escape(n)}</li>" for n in notes) + "</ul>")
    parts.append(f"<p class='muted'>generated {escape(str(summary.generated_at))} in "
                 f"{_fmt(summary.verify_seconds)} s</p></body></html>")
    return "".join(parts)


def _counts(counts: dict) -> str:
    if not counts:
        return "<h2>Counts</h2><p class='muted'>not computed</p>"
    return "<h2>Counts</h2><div class='kv'>" + "".join(
        f"<div><span class='k'>{escape(k)}</span> {escape(_fmt(v))}</div>"
        for k, v in counts.items()) + "</div>"


def _throughput(m: dict, t0: int, colours: Mapping[str, str] | None) -> str:
    faults, per_sec = m.get("fault_windows") or [], m["per_second"]
    tp = m.get("throughput") or {}
    return ("<h2>Throughput, latency and consumer lag</h2>"
            + _img(plots.throughput_png(per_sec, faults, t0, fault_colours=colours), "throughput")
            + (f"<p class='muted'>Ack latency per second: unknown ({escape(why)}).</p>"
               if (why := unknown_in(m)) else
               _img(plots.latency_png(per_sec, faults, t0, fault_colours=colours), "ack latency"))
            + _img(plots.lag_png(m.get("consumer_lag") or [], faults, t0, fault_colours=colours),
                   "consumer lag")
            + f"<p>Mean sent {_fmt(tp.get('sent_per_s_mean'))}/s, acked "
              f"{_fmt(tp.get('acked_per_s_mean'))}/s over {_fmt(tp.get('seconds_active'))} "
              f"active seconds; peak acked {_fmt(tp.get('acked_per_s_max'))}/s.</p>")


def _leadership_and_recovery(summary: Summary, m: dict, t0: int,
                             colours: Mapping[str, str] | None) -> str:
    faults = m.get("fault_windows") or []
    tl = summary.timeline
    marks = {k.name: summary.anomaly_explanations.get(k.name) or []
             for k in KINDS if k.mark}
    brokers = {int(k): v for k, v in (tl.get("brokers") or {}).items()}
    out = ["<h2>Leadership, ISR and unavailability</h2>",
           _img(plots.leadership_png(tl.get("observations") or [], m.get("partitions") or [],
                                     m.get("unavailability") or [], faults, t0,
                                     m.get("run_end_us") or t0, marks, brokers,
                                     fault_colours=colours),
                "leader/ISR timeline")]
    labels = {f["fault_id"]: f.get("label") or f["name"] for f in faults}
    out.append(_changes(tl.get("observations") or [], brokers, labels, t0, opened=not faults))
    un = m.get("unavailability") or []
    thr = summary.config.get("unavailability_threshold_s")
    unknown = unknown_in(m)
    out.append(f"<p>Unavailability windows (no successful ack for more than {_fmt(thr)} s "
               f"while sends were pending; not before a partition's first ack): "
               + (f"unknown ({escape(unknown)})" if unknown else str(len(un))) + "</p>")
    if un:
        out.append(_table(["partition", "from", "to", "seconds", "ended by an ack", "fault"],
                          [[f"{w['topic']}-{w['partition']}", when(w["start_us"], t0),
                            when(w["end_us"], t0), w["seconds"], w["ended_by_ack"],
                            labels.get(w.get("fault_id"), w.get("fault_id") or "–")]
                           for w in un[:200]], fit=True))
    rec = m.get("recovery") or []
    if rec:
        out.append("<h2>Faults and recovery</h2>")
        out.append(_table(
            ["fault", "what it did", "injected", "healed", "recovery (s)", "after heal (s)",
             "unavailable (s)", "controller failover (s)", "partitions (from)",
             "never recovered"],
            [_recovery_row(r, t0, unknown is not None) for r in rec],
            ["bad" if r.get("inject_error") or r.get("heal_error") else "" for r in rec], fit=True))
    return "".join(out)


def _recovery_row(r: dict, t0: int, unknown: bool = False) -> list:
    """unknown: the run's send times are, and so is what is measured from them."""
    if r.get("inject_error"):       # it did nothing, and owns nothing
        return [r.get("label") or r["name"], f"not injected: {r['inject_error']}",
                when(r["start_us"], t0), *["–"] * 7]
    did = r.get("description") or r.get("target")
    if r.get("heal_error"):
        did = f"{did}; its heal failed: {r['heal_error']}"
    return [r.get("label") or r["name"], did,
            when(r["start_us"], t0), when(r["end_us"], t0) if r.get("healed") else "never",
            *(["unknown"] * 3 if unknown else [
                "no partition unavailable" if r.get("no_partition_unavailable") else r.get("seconds"),
                r.get("after_heal_s"), r.get("unavailable_s")]),
            r.get("controller_failover_s"),
            f"{len(r['partitions'])} ({r['partitions_from']})",
            ", ".join(r.get("never_recovered") or [])]


CHANGES_SHOWN = 300


def _changes(observations: list[dict], brokers: dict, labels: dict, t0: int, opened: bool) -> str:
    """Every leader, ISR and controller change the observer saw, in order (open when the
    run had no faults of its own: `--watch`, where they are the story)."""
    rows = []
    for o in observations:
        name, target, leader = o.get("name"), o.get("target"), o.get("leader")
        if name not in ("leader", "isr", "controller"):
            continue
        where = f"{o.get('topic')}-{o['partition']}" if o.get("partition") is not None else "cluster"
        if name == "leader":
            now = "none" if leader is None else brokers.get(leader, target or leader)
        elif name == "isr":
            now = ", ".join(str(brokers.get(b, b)) for b in o.get("isr") or []) or "empty"
        else:
            now = target or "none"
        rows.append([when(o["ts_us"], t0), name, where, now, labels.get(o.get("fault_id"), "–")])
    more = f" (the first {CHANGES_SHOWN})" if len(rows) > CHANGES_SHOWN else ""
    return (f"<details{' open' if opened else ''}><summary>Every leader, ISR and controller change "
            f"the observer saw: {len(rows)}{more}</summary>"
            + _table(["at", "what", "where", "now", "during"], rows[:CHANGES_SHOWN], fit=True)
            + "</details>")


def _configuration(summary: Summary, scenario: dict | None, manifest: dict | None) -> str:
    cfg = summary.config
    facts, src = cfg.get("facts") or {}, cfg.get("fact_sources") or {}
    out = ["<h2>Configuration</h2>",
           _table(["fact", "value", "from"],
                  [[k, "unknown" if v is None else str(v).lower(), src.get(k)]
                   for k, v in facts.items()]),
           f"<p>Expectations from: {escape(str(cfg.get('expectations_from')))}</p>"]
    checks = summary.verdict.get("checks") or []
    if checks:
        out.append(_table(["expectation", "actual", "status", "reason"],
                          [[c["expectation"], c["actual"], c["status"], c["reason"]]
                           for c in checks], [("bad" if c["status"] == "failed" else "")
                                              for c in checks]))
    for name, doc in (("scenario.yaml", scenario), ("manifest.json", manifest)):
        body = (yaml.safe_dump(doc, sort_keys=False) if name.endswith("yaml")
                else json.dumps(doc, indent=2)) if doc is not None else "absent"
        out.append(f"<details><summary>{name}</summary><pre>{escape(body)}</pre></details>")
    return "".join(out)
