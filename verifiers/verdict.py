"""Checking expectations against a summary: one readable reason per failure."""
from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

from families.records.send_times import unknown_in
from verifiers.expectations import LATENCIES, Expectation, ExpectationSet

_VIOLATION_OP = {"==": "!=", "!=": "==", "<=": ">", ">=": "<", "<": ">=", ">": "<="}


@dataclass(frozen=True)
class Check:
    expectation: str
    actual: float | None
    status: str            # "passed", "failed", "not judged"
    reason: str


@dataclass(frozen=True)
class Verdict:
    status: str            # "passed", "failed", "unknown"
    failures: tuple[str, ...] = ()
    not_judged: tuple[str, ...] = ()
    checks: tuple[Check, ...] = ()
    reason: str | None = None    # why the verdict is unknown

    @property
    def passed(self) -> bool:
        return self.status == "passed"

    @property
    def exit_code(self) -> int:
        return {"passed": 0, "failed": 1}.get(self.status, 2)

    def to_dict(self) -> dict:
        return {"passed": self.passed, "status": self.status, "failures": list(self.failures),
                "not_judged": list(self.not_judged), "reason": self.reason,
                "checks": [asdict(c) for c in self.checks]}


def unknown(reason: str, checks: tuple[Check, ...] = ()) -> Verdict:
    return Verdict("unknown", checks=checks, reason=reason)


# what is measured from send times: unknown when no producer recorded any
SEND_TIME_METRICS = ("max_unavailability_s", "max_recovery_s", *LATENCIES)


def metric_value(summary: dict, metric: str) -> tuple[float | None, str | None]:
    """The value an expectation compares, or None and why it is missing. A count's
    `count_notes` entry (who died, which fault failed, which workload fell short) is
    the why: said beside a failure, or why it was not measured."""
    notes = summary.get("count_notes") or {}
    if metric in summary.get("anomalies", {}):
        return summary["anomalies"][metric], None
    if metric in summary.get("counts", {}):
        return summary["counts"][metric], notes.get(metric)
    metrics = summary.get("metrics", {})
    if metric in SEND_TIME_METRICS and (why := unknown_in(metrics)):
        return None, f"unknown: {why}"
    if metric == "max_unavailability_s":
        return max((w["seconds"] for w in metrics.get("unavailability", [])), default=0.0), None
    if metric == "max_recovery_s":
        rec = metrics.get("recovery", [])
        never = [r["name"] for r in rec if r.get("seconds") is None]
        if never:
            return float("inf"), f"never recovered from {', '.join(never)}"
        return max((r["seconds"] for r in rec), default=0.0), None
    if metric in _DERIVED_FROM_METRICS:
        return _DERIVED_FROM_METRICS[metric](metrics)
    if "." in metric:
        group, key = metric.split(".", 1)
        v = metrics.get(group, {}).get(key)
        return (v, None) if v is not None else (None, f"{metric} has no value (no samples)")
    return None, notes.get(metric) or f"{metric} is not in the summary"


_NO_ISR = "the summary has no isr (verified before ISR was measured)"


def _shrunk(metrics: dict) -> list[dict] | None:
    """The faults during which some ISR shrank; None for a summary without ISR metrics."""
    return None if "isr" not in metrics else [f for f in metrics["isr"] if f["shrunk_s"] is not None]


def _isr_shrinks(metrics: dict) -> tuple[float | None, str | None]:
    shrunk = _shrunk(metrics)
    return (None, _NO_ISR) if shrunk is None else (len(shrunk), None)


def _max_isr_restore(metrics: dict) -> tuple[float | None, str | None]:
    shrunk = _shrunk(metrics)
    if shrunk is None:
        return None, _NO_ISR
    never = [f["name"] for f in shrunk if f["restored_after_heal_s"] is None]
    if never:
        return float("inf"), f"no full ISR again after {', '.join(never)}"
    return max((f["restored_after_heal_s"] for f in shrunk), default=0.0), None


def _acked_during(metrics: dict) -> tuple[float | None, str | None]:
    windows = metrics.get("fault_windows", [])
    if any("acked_during" not in w for w in windows):
        return None, "the summary has no acked_during (verified before it was measured)"
    return sum(w["acked_during"] for w in windows), None


def _max_stall(metrics: dict) -> tuple[float | None, str | None]:
    groups = metrics.get("consumer_lag", [])
    if any("longest_stall_s" not in g for g in groups):
        return None, "the summary has no longest_stall_s (verified before it was measured)"
    return max((g["longest_stall_s"] for g in groups), default=0), None


_DERIVED_FROM_METRICS = {"isr_shrinks": _isr_shrinks, "max_isr_restore_s": _max_isr_restore,
              "acked_during_faults": _acked_during, "max_consumer_stall_s": _max_stall}


def _fmt(x: float) -> str:
    if x == float("inf"):
        return "∞"
    return str(int(x)) if float(x).is_integer() else f"{x:.3f}".rstrip("0")


def judge(summary: dict, exps: ExpectationSet, facts: dict[str, bool | None],
          fact_sources: dict[str, str]) -> Verdict:
    checks: list[Check] = []
    for e in exps.expectations:
        checks.append(_check(summary, e, facts, fact_sources))
    failures = tuple(c.reason for c in checks if c.status == "failed")
    not_judged = tuple(c.reason for c in checks if c.status == "not judged")
    return Verdict("failed" if failures else "passed", failures, not_judged, tuple(checks))


def _check(summary: dict, e: Expectation, facts: dict[str, Any],
           fact_sources: dict[str, str]) -> Check:
    if e.when is not None:
        fact = facts.get(e.when)
        if fact is None:
            return Check(e.text, None, "not judged",
                         f"{e.text}: not judged, {e.when} is unknown "
                         f"({fact_sources.get(e.when, 'unknown')})")
        if bool(fact) == e.when_negated:
            return Check(e.text, None, "not judged",
                         f"{e.text}: does not apply ({e.when} is {str(fact).lower()})")
    actual, why = metric_value(summary, e.metric)
    if actual is None:
        return Check(e.text, None, "not judged", f"{e.text}: not judged, {why}")
    if e.holds(float(actual)):
        return Check(e.text, float(actual), "passed", f"{e.metric}: {_fmt(actual)} "
                     f"{e.op} {_fmt(e.value)}")
    reason = f"{e.metric}: {_fmt(actual)} {_VIOLATION_OP[e.op]} {_fmt(e.value)}"
    if e.op == "==":
        reason = f"{e.metric}: {_fmt(actual)} {'>' if actual > e.value else '<'} {_fmt(e.value)}"
    if e.when:
        reason += f" (expected {e.text})"
    if why:
        reason += f" ({why})"
    return Check(e.text, float(actual), "failed", reason)
