"""A suite's outputs: summary.json, index.html (one row per variant, linked to its run
report), summary.md (the same table in Markdown) and junit.xml (one testcase per scenario × mode × version × repeat)."""
from __future__ import annotations

import json
from collections import defaultdict
from html import escape
from pathlib import Path

from verifiers.junit import junit_xml

STYLE = ("body{font-family:sans-serif;margin:2em}table{border-collapse:collapse}"
         "td,th{border:1px solid #ccc;padding:4px 8px;vertical-align:top;font-size:90%}"
         ".passed{background:#e6f4ea}.failed{background:#fce8e6}.unknown,.skipped{background:#fef7e0}")
COLUMNS = ("claim", "configuration", "fault", "mode", "version", "expected", "observed", "verdict",
           "evidence")


def stability(rows: list[dict]) -> dict[tuple, str]:
    """With repeats: 'solid' when every repeat of a variant agrees, else 'flaky (k/n passed)'."""
    groups: dict[tuple, list[str]] = defaultdict(list)
    for r in rows:
        if r["verdict"] != "skipped":
            groups[(r["scenario"], r["mode"], r["version"])].append(r["verdict"])
    out = {}
    for key, verdicts in groups.items():
        passed = verdicts.count("passed")
        out[key] = "solid" if len(set(verdicts)) == 1 else f"flaky ({passed}/{len(verdicts)} passed)"
    return out


def write_outputs(suite_dir: Path, name: str, rows: list[dict], skipped: list[dict],
                  seconds: float) -> None:
    stable = stability(rows)
    for r in rows:
        r["stability"] = stable.get((r["scenario"], r["mode"], r["version"]))
    (suite_dir / "summary.json").write_text(json.dumps(
        {"suite": name, "seconds": round(seconds, 1), "rows": rows, "not_applicable": skipped},
        indent=2, default=str) + "\n")
    (suite_dir / "index.html").write_text(_html(suite_dir, name, rows, skipped))
    (suite_dir / "summary.md").write_text(_markdown(suite_dir, name, rows, seconds))
    (suite_dir / "junit.xml").write_text(_junit(name, rows))


def _number(n) -> str:
    if n is None or n == float("inf"):
        return "never"
    return str(int(n)) if float(n).is_integer() else f"{n:.1f}"


def _text(r: dict, column: str) -> str:
    """A row's cell as plain text (the HTML and Markdown tables both show it)."""
    if column == "expected":
        return "; ".join(r["expected"])
    if column == "observed":
        observed = r.get("observed") or {}
        text = ", ".join(f"{k} {_number(n)}" for k, n in observed.items()) or "no anomaly"
        return text + ("" if not r.get("failures") else "; " + "; ".join(r["failures"]))
    if column == "verdict":
        extra = f" ({r['stability']})" if r.get("stability") and r["stability"] != "solid" else ""
        return r["verdict"] + extra + (f": {r.get('why') or r.get('reason')}"
                                       if r["verdict"] in ("skipped", "unknown") else "")
    return str(r.get(column, ""))


def _report_link(suite_dir: Path, r: dict) -> str | None:
    if not r.get("run_dir"):
        return None
    return f"{Path(r['run_dir']).resolve().relative_to(suite_dir.resolve())}/report/index.html"


def _cell(suite_dir: Path, r: dict, column: str) -> str:
    if column == "expected":
        return "<br>".join(escape(e) for e in r["expected"])
    if column == "evidence":
        link = _report_link(suite_dir, r)
        return "" if link is None else f"<a href='{escape(link)}'>report</a>"
    return escape(_text(r, column))


def _markdown(suite_dir: Path, name: str, rows: list[dict], seconds: float) -> str:
    """The same table for a CI job summary or a results file."""
    def cell(r: dict, c: str) -> str:
        text = (f"[report]({_report_link(suite_dir, r)})" if _report_link(suite_dir, r) else "") \
            if c == "evidence" else _text(r, c)
        return text.replace("|", "\\|").replace("\n", " ")
    lines = [f"# suite {name} ({seconds / 60:.1f} min)", "", "| " + " | ".join(COLUMNS) + " |",
             "|" + "---|" * len(COLUMNS)]
    lines += ["| " + " | ".join(cell(r, c) for c in COLUMNS) + " |" for r in rows]
    return "\n".join(lines) + "\n"


def _html(suite_dir: Path, name: str, rows: list[dict], skipped: list[dict]) -> str:
    head = "".join(f"<th>{c}</th>" for c in COLUMNS)
    body = "".join(f"<tr class='{escape(r['verdict'])}'>"
                   + "".join(f"<td>{_cell(suite_dir, r, c)}</td>" for c in COLUMNS) + "</tr>"
                   for r in rows)
    na = "".join(f"<li>{escape(s['scenario'])} {escape(str(s['mode']))} {escape(str(s['version']))}: "
                 f"{escape(s['why'])}</li>" for s in skipped)
    return (f"<!doctype html><meta charset='utf-8'><title>suite {escape(name)}</title>"
            f"<style>{STYLE}</style><h1>suite {escape(name)}</h1><table><tr>{head}</tr>{body}</table>"
            + (f"<h2>Not applicable</h2><ul>{na}</ul>" if na else ""))


def _junit(name: str, rows: list[dict]) -> str:
    outcome = {"passed": "passed", "failed": "failed", "skipped": "skipped", "not verified": "skipped"}

    def message(r: dict) -> str:
        if r["verdict"] == "failed":
            return "; ".join(r.get("failures") or []) or "expectations violated"
        return str(r.get("why") or r.get("reason") or "")
    return junit_xml(f"harness suite {name}", f"harness.batch.suite.{name}",
                     [(f"{r['scenario']} [{r['mode']} {r['version']} #{r['repeat']}]",
                       outcome.get(r["verdict"], "error"), message(r)) for r in rows])
