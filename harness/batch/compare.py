"""`harness compare SCENARIO --vary key=v1,v2[,…]`: one scenario, several configurations.

Each `--vary` is one axis (a `--set` key and its values); several make a grid.
Every variant runs the same scenario with the same seed, hence the same fault
timeline and the same seeded choices; `--repeat N` runs each variant N times
with seeds seed, seed+1, … (the same seeds for every variant, so repeat k of
one variant is paired with repeat k of another). Every variant is validated
before anything starts; an unknown key is refused naming the closest field.
Runs go one after another into the compare dir, sharing one Spark session.

What is compared comes from each run's report/summary.json (`extract`); the
differences worth a reader's attention (`differences`) are:
  - an anomaly kind that is zero in one variant and not in another;
  - a fault's recovery more than 2x apart between two variants.
With repeats a difference is called only when the variants' spreads (min..max
over repeats) do not overlap, so one noisy run does not make a claim.
Outputs: compare.json, index.html, junit.xml (harness/batch/compare_report.py).
Exit 0 when every run met its scenario's expectations, 1 otherwise, 2 on bad input.
"""
from __future__ import annotations

import itertools
import statistics
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from core.errors import SpecError
from harness.run.runner import run_all
from harness.scenario import Scenario, load_scenario
from spark_reports.summary import Summary

RECOVERY_FACTOR = 2.0          # the "recovery more than 2x apart"
LATENCIES = ("p50", "p99", "p999")


@dataclass(frozen=True)
class Axis:
    key: str
    values: tuple[str, ...]


@dataclass(frozen=True)
class Planned:
    label: str                   # e.g. "producer.acks=1"; one per variant, shared by its repeats
    overrides: tuple[str, ...]   # the --set strings of this variant (base overrides first)
    repeat: int
    scenario: Scenario


def parse_vary(texts: list[str]) -> list[Axis]:
    if not texts:
        raise SpecError("--vary", "missing", "give at least one, e.g. --vary producer.acks=1,all")
    axes, seen = [], set()
    for text in texts:
        key, sep, raw = text.partition("=")
        values = tuple(v.strip() for v in raw.split(",") if v.strip())
        if not sep or not key.strip():
            raise SpecError(f"--vary {text}", "no '='", "write --vary key.path=v1,v2")
        if len(values) < 2 or len(set(values)) != len(values):
            raise SpecError(f"--vary {text}", "needs two or more distinct values",
                            "write e.g. --vary producer.acks=1,all")
        if key.strip() in seen:
            raise SpecError(f"--vary {key}", "given twice", "list every value in one --vary")
        seen.add(key.strip())
        axes.append(Axis(key.strip(), values))
    return axes


def grid(axes: list[Axis]) -> list[tuple[str, ...]]:
    """Every combination of the axes' values, as --set strings, first axis slowest."""
    return [tuple(f"{a.key}={v}" for a, v in zip(axes, combo))
            for combo in itertools.product(*(a.values for a in axes))]


def plan(scenario: str | None, axes: list[Axis], repeat: int, base: tuple[str, ...] = (),
         seed: int | None = None) -> list[Planned]:
    """Every run, validated before any starts."""
    if repeat < 1:
        raise SpecError("--repeat", f"{repeat} is not 1 or more", "use --repeat 1 or more")
    first = load_scenario(scenario, base, seed)      # a broken scenario or --set stops here
    for axis in axes:
        for value in axis.values:
            _check_vary(scenario, base, seed, axis.key, value)
    return [Planned(" ".join(sets), base + sets, r, _load_cell(scenario, base, sets, first.seed + r))
            for sets in grid(axes) for r in range(repeat)]


def _check_vary(scenario: str | None, base: tuple[str, ...], seed: int | None, key: str,
                value: str) -> None:
    """A --vary key the model does not have, named as the --vary with the closest field
    (a shorthand such as producer.acks is expanded to workload.producers[i] first).
    A value's own errors are left to the grid cells: valid only with another axis's value
    (enable_idempotence=true with acks=all) is still valid."""
    try:
        load_scenario(scenario, (*base, f"{key}={value}"), seed)
    except SpecError as e:
        if e.field.startswith("--set") and e.problem == "unknown field":
            raise SpecError(f"--vary {key}", "unknown field", e.fix) from None


def _load_cell(scenario: str | None, base: tuple[str, ...], sets: tuple[str, ...], seed: int) -> Scenario:
    """One grid cell, validated; its error names the cell's --vary values."""
    try:
        return load_scenario(scenario, base + sets, seed)
    except SpecError as e:
        where = e.field.split(": ", 1)[-1] if e.field.startswith("--set") else e.field
        raise SpecError(f"--vary {' '.join(sets)}", f"{where}: {e.problem}", e.fix) from None


def run_compare(planned: list[Planned], compare_dir: Path, progress: str,
                spark_master: str | None) -> list[dict]:
    """Run every planned run in order, one Spark session for all their verifications.
    A Ctrl-C or SIGTERM stops the compare: the runs made so far are returned."""
    rows: list[dict] = []

    def label(i: int, p: Planned) -> str:
        return f"[{i + 1}/{len(planned)}] {p.label} #{p.repeat} (seed {p.scenario.seed})"

    def scenario_of(i: int, p: Planned) -> Scenario:
        print(f"{label(i, p)}: running", flush=True)
        return p.scenario

    def on_result(i: int, p: Planned, result) -> None:
        rows.append(run_row(p, result.run_dir, result.status, result.exit_code, result.reason,
                            result.summary))
        print(f"{label(i, p)}: {result.status} (exit {result.exit_code})", flush=True)
        if result.interrupted:
            rows[-1]["interrupted"] = True

    run_all(planned, scenario_of, compare_dir, progress, spark_master, on_result)
    return rows


def run_row(p: Planned, run_dir: Path, status: str, exit_code: int, reason: str | None,
            summary: Summary | None) -> dict:
    return {"variant": p.label, "overrides": list(p.overrides), "repeat": p.repeat,
            "seed": p.scenario.seed, "run_dir": str(run_dir), "status": status,
            "exit_code": exit_code, "reason": reason,
            "failures": summary.failures if summary else [],
            "metrics": extract(summary or Summary())}


def extract(summary: Summary) -> dict[str, Any]:
    """The numbers compared, flat: name -> value (None when the run did not give it)."""
    m = summary.metrics
    out: dict[str, Any] = {f"anomaly.{k}": n for k, n in summary.anomalies.items()}
    ack = m.get("ack_latency_ms") or {}
    for q in LATENCIES:
        out[f"ack_ms.{q}"] = ack.get(q)
    for i, w in enumerate(sorted(m.get("fault_windows") or [], key=lambda w: w.get("start_us") or 0)):
        lat = w.get("ack_latency_ms") or {}
        for q in LATENCIES:
            out[f"fault{i + 1}.{w.get('name')}.ack_ms.{q}"] = lat.get(q)
    out["throughput.acked_per_s"] = (m.get("throughput") or {}).get("acked_per_s_mean")
    out["max_unavailability_s"] = m.get("max_unavailability_s")
    for i, r in enumerate(sorted(m.get("recovery") or [], key=lambda r: r.get("start_us") or 0)):
        # None: never recovered (the spec's null); compared as longer than any number.
        out[f"fault{i + 1}.{r.get('name')}.recovery_s"] = r.get("seconds")
    return out


def spread(values: list[Any]) -> dict[str, Any]:
    """Median and min..max over repeats; a None (never recovered / not measured) is kept apart."""
    nums = [v for v in values if isinstance(v, int | float)]
    return {"median": statistics.median(nums) if nums else None, "min": min(nums, default=None),
            "max": max(nums, default=None), "n": len(nums), "missing": len(values) - len(nums)}


def aggregate(rows: list[dict]) -> dict[str, dict[str, dict]]:
    """variant -> metric -> spread over its repeats (in the order variants were run)."""
    by_variant: dict[str, list[dict]] = {}
    for r in rows:
        by_variant.setdefault(r["variant"], []).append(r["metrics"])
    out = {}
    for variant, metrics in by_variant.items():
        names = list(dict.fromkeys(k for m in metrics for k in m))
        out[variant] = {k: spread([m.get(k) for m in metrics]) for k in names}
    return out


def differences(stats: dict[str, dict[str, dict]]) -> list[dict]:
    """The differences that matter, between every pair of variants (see the module doc)."""
    found = []
    for a, b in itertools.combinations(stats, 2):
        for metric in dict.fromkeys([*stats[a], *stats[b]]):
            sa, sb = stats[a].get(metric), stats[b].get(metric)
            if sa is None or sb is None:
                continue
            if metric.startswith("anomaly."):
                call = _zero_vs_nonzero(a, sa, b, sb)
            elif metric.endswith(".recovery_s"):
                call = _recovery_apart(a, sa, b, sb)
            else:
                call = None
            if call is not None:
                found.append({"metric": metric, "a": a, "b": b, **call})
    return found


def _zero_vs_nonzero(a: str, sa: dict, b: str, sb: dict) -> dict | None:
    # Zero in every repeat of one, above zero in every repeat of the other: spreads apart.
    if sa["missing"] or sb["missing"] or not sa["n"] or not sb["n"]:
        return None
    if sa["max"] == 0 and sb["min"] > 0:
        return {"kind": "zero vs nonzero", "zero": a, "nonzero": b, "why": _why(a, sa, b, sb)}
    if sb["max"] == 0 and sa["min"] > 0:
        return {"kind": "zero vs nonzero", "zero": b, "nonzero": a, "why": _why(a, sa, b, sb)}
    return None


def _bounds(s: dict) -> tuple[float, float]:
    """min..max of a recovery spread; a never-recovered repeat makes the top infinite."""
    top = float("inf") if s["missing"] else s["max"]
    low = s["min"] if s["n"] else float("inf")
    return low, top


def _recovery_apart(a: str, sa: dict, b: str, sb: dict) -> dict | None:
    (alo, ahi), (blo, bhi) = _bounds(sa), _bounds(sb)
    for fast, fhi, slow, slo in ((a, ahi, b, blo), (b, bhi, a, alo)):
        # Called only when even the slowest repeat of `fast` is > 2x quicker than the
        # quickest repeat of `slow`; a floor of 1 s keeps 0.1 s vs 0.3 s from being news.
        if slo > RECOVERY_FACTOR * max(fhi, 1.0):
            return {"kind": f"recovery > {RECOVERY_FACTOR:g}x apart", "faster": fast, "slower": slow,
                    "why": _why(a, sa, b, sb)}
    return None


def _why(a: str, sa: dict, b: str, sb: dict) -> str:
    return f"{a}: {fmt_spread(sa)}; {b}: {fmt_spread(sb)}"


def fmt_spread(s: dict) -> str:
    def num(v):
        return f"{v:g}"
    if not s["n"]:
        return "never recovered" if s["missing"] else "-"
    if s["n"] + s["missing"] == 1:
        return num(s["median"])
    never = f", {s['missing']} never" if s["missing"] else ""
    return f"median {num(s['median'])} [{num(s['min'])}..{num(s['max'])}{never}]"


def exit_code(rows: list[dict], planned: int | None = None) -> int:
    """0: every run met the expectations; 1: one did not; 2: the compare was stopped
    before every planned run was made (Ctrl-C, SIGTERM)."""
    if any(r.get("interrupted") for r in rows) or (planned is not None and len(rows) < planned):
        return 2
    return 0 if rows and all(r["status"] == "passed" for r in rows) else 1
