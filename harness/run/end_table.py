"""The short table at the end of a run: verdict and why, counts, anomalies, each fault
in the scenario's words with what it cost (what failed, for a fault that could not be
injected), what else went wrong, each workload's load against its plan, how the fault
plan went, and where the report is.

The live progress panel is closed before anything here is printed: printed beside a
live display, the tables lost their rows on a terminal when the panel closed.
"""
from __future__ import annotations

import sys
from typing import TYPE_CHECKING

from rich.console import Console
from rich.table import Table

from families.records.send_times import unknown_in
from spark_reports.summary import Summary

if TYPE_CHECKING:
    from harness.run import Run


def _seconds(v) -> str:
    return "never" if v is None else f"{v:.1f} s"


RECOVERY_COLUMNS = ("fault", "what it did", "recovery", "after heal", "unavailable",
                    "controller failover", "ISR shrunk", "ISR full after heal")


def recovery_rows(summary: Summary) -> list[list[str]]:
    """Per fault: recovery (the spec's; "none" when it made no partition unavailable),
    the controller failover when it hit the active controller, and when its
    partitions' ISR shrank after the injection and was full again after the heal ("-":
    it never shrank)."""
    isr = {f["fault_id"]: f for f in summary.metrics.get("isr", [])}
    unknown = unknown_in(summary.metrics) is not None    # no producer recorded send times
    rows = []
    for r in summary.metrics.get("recovery", []):
        if r.get("inject_error"):       # it did nothing, and owns nothing
            rows.append([r.get("label") or r.get("name", "?"),
                         f"not injected: {r['inject_error']}", *["-"] * 6])
            continue
        i = isr.get(r.get("fault_id"), {"shrunk_s": None})
        shrank = i["shrunk_s"] is not None
        failover = r.get("controller_failover_s")
        did = r.get("description") or ""
        if r.get("heal_error"):
            did += f"; its heal failed: {r['heal_error']}"
        rows.append([r.get("label") or r.get("name", "?"), did,
                     *(["unknown"] * 3 if unknown else [
                         "no partition unavailable" if r.get("no_partition_unavailable")
                         else _seconds(r.get("seconds")),
                         _seconds(r.get("after_heal_s")), _seconds(r.get("unavailable_s"))]),
                     _seconds(failover) if failover is not None or r.get("controller") else "-",
                     _seconds(i["shrunk_s"]) if shrank else "-",
                     _seconds(i["restored_after_heal_s"]) if shrank else "-"])
    return rows


def max_unavailability(summary: Summary) -> float:
    windows = summary.metrics.get("unavailability", [])
    return max((w.get("seconds") or (w.get("end_us", 0) - w.get("start_us", 0)) / 1e6
                for w in windows), default=0.0)


def _head(summary: Summary, verdict, run_id: str) -> Table:
    colour = {"passed": "green", "failed": "red"}.get(verdict.status, "yellow")
    head = Table(title=f"run {run_id}: [{colour}]{verdict.status.upper()}[/]", show_header=False)
    head.add_row("counts", ", ".join(f"{k} {summary.count(k)}" for k in
                                     ("sent", "acked", "failed", "indeterminate", "consumed")))
    head.add_row("anomalies", ", ".join(f"{k} {n}" for k, n in summary.anomalies.items()))
    unknown = unknown_in(summary.metrics)
    head.add_row("max unavailability", f"unknown ({unknown})" if unknown
                 else f"{max_unavailability(summary):.1f} s")
    for c in verdict.checks:
        mark = {"passed": "[green]held[/]", "failed": "[red]violated[/]"}.get(c.status, "not judged")
        head.add_row(mark, c.reason)
    if verdict.reason:
        head.add_row("unknown", verdict.reason)
    for p in summary.problems:
        head.add_row("[yellow]went wrong[/]", p["text"])
    return head


def print_end_table(run: "Run", console: Console | None = None) -> None:
    run.close_progress()
    # off a terminal (CI logs) rich assumes 80 columns: too narrow for the fault table
    console = console or (Console() if sys.stdout.isatty() else Console(width=160))
    v = run.verified
    console.print(_head(v.summary, v.verdict, run.ctx.run_id))
    rows = recovery_rows(v.summary)
    if rows:
        rec = Table(*RECOVERY_COLUMNS)
        for row in rows:
            rec.add_row(*row)
        console.print(rec)
    load = load_table(v.summary)
    if load is not None:
        console.print(load)
    _print_plan(run, console)
    console.print(f"report: {v.report_dir}/index.html")


LOAD_COLUMNS = ("workload", "plan", "planned", "sent", "of plan", "first send", "longest gap")


def load_rows(summary: Summary) -> list[tuple[list[str], bool]]:
    """Per producing workload: its plan, what it sent, the first send after the
    workloads started and the longest gap between sends; and whether it was short."""
    rows = []
    for w in summary.load.get("workloads") or []:
        frac = w.get("fraction")
        rows.append(([f"{w['workload']} ({w['kind']})", w["plan"],
                      "-" if w.get("planned") is None else f"{w['planned']:,}", f"{w['sent']:,}",
                      "-" if frac is None else f"{100 * frac:.1f} %",
                      _seconds(w.get("start_delay_s")) if w["sent"] else "-",
                      _seconds(w.get("longest_gap_s")) if w["sent"] > 1 else "-"], w["short"]))
    return rows


def load_table(summary: dict) -> Table | None:
    rows = load_rows(summary)
    if not rows:
        return None
    t = Table(*LOAD_COLUMNS, title="load against its plan")
    for cells, short in rows:
        t.add_row(*cells, style="red" if short else None)
    return t


def _print_plan(run: "Run", console: Console) -> None:
    plan = run.faults.plan() if run.faults is not None else []
    if not plan:
        return
    t = Table("planned fault", "at", "injected", "slip", "healed", "error")
    for p in plan:
        t.add_row(p.label, f"{p.at_s:g} s", _seconds(p.injected_s),
                  _seconds(p.slip_s), _seconds(p.healed_s), p.error or "")
    console.print(t)
