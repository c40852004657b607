"""The records family's metrics (its Family.metrics): latencies, throughput and
consumer lag (throughput.py), unavailability and recovery (availability.py), ISR
shrink and regrowth (isr.py), per fault and run-wide, as summary["metrics"]; unknown
where they need send times and no producer recorded any (send_times.py).

Spark scans the records view once (throughput.histograms); the rest is small
arithmetic on the driver over the histograms and the timeline. The pipeline runs
this beside the anomaly kinds, whose many small jobs leave a core idle at times.
"""
from __future__ import annotations

import time

from core.timeline import Timeline
from families.base import RunData
from families.records import availability as A
from families.records import throughput as T
from families.records.isr import isr_by_fault
from families.records.send_times import why_unknown, without_send_times


def records_metrics(data: RunData) -> dict:
    """The family's metrics: summary["metrics"], and the seconds each step took."""
    views, consumed = data.checked.views, data.checked.consumed
    found, steps = _measure(data.spark, views, consumed, data.timeline, list(data.topics),
                            list(data.partitions), data.threshold_s)
    doc = _metrics_doc(found, data.timeline, views.sizes, data.partitions)
    why = why_unknown(data.events)
    if why is not None:
        doc = without_send_times(doc, why)
    return {"summary": {"metrics": doc}, "steps": steps}


class _Steps:
    """Seconds per step: each the time since the step before."""

    def __init__(self):
        self.took, self.t = {}, time.monotonic()

    def __call__(self, name: str) -> None:
        now = time.monotonic()
        self.took[name] = round(now - self.t, 3)
        self.t = now


def _measure(spark, views, consumed, tl: Timeline, topics: list[str],
             all_parts: list[tuple[str, int]], threshold: float) -> tuple[dict, dict]:
    """Every metric from the views (topics: the history's, sorted), and the seconds
    each step took."""
    step = _Steps()
    threshold_us = int(threshold * 1_000_000)
    inputs = T.metric_inputs(views.records, topics)
    hist = T.histograms(inputs, tl, threshold_us)
    out = {"latencies": T.latencies(hist), "fault_latencies": T.fault_latencies(hist, tl)}
    step("latency")
    out["per_second"] = T.per_second(hist, consumed)
    out["consumer_lag"] = T.consumer_lag(hist, views.groups, topics)
    step("per_second")
    out["unavailability"] = A.unavailability(spark, inputs, threshold,
                                             views.sizes["run_end_us"], hist, all_parts, topics)
    step("unavailability")
    touched = A.touched_by_fault(tl, hist, all_parts, topics)
    for w in out["unavailability"]:
        w["fault_id"] = A.window_owner(tl, w, threshold_us)
    out["recovery"] = A.recovery(tl, touched, out["unavailability"], threshold_us)
    out["isr"] = isr_by_fault(tl, touched)
    out["acked_during"] = T.acked_during(hist, tl, touched, topics)
    step("recovery")
    return out, step.took


def _metrics_doc(m: dict, tl: Timeline, sizes: dict, partitions) -> dict:
    """summary["metrics"] (docs/history.md) from what _measure found."""
    per_sec, unavail, recov = m["per_second"], m["unavailability"], m["recovery"]
    active = [s for s in per_sec if s["acked"] or s["sent"]]
    return {
        **m["latencies"],
        "unavailability": unavail,
        "max_unavailability_s": max((w["seconds"] for w in unavail), default=0.0),
        "recovery": recov,
        "max_recovery_s": (None if any(r["seconds"] is None for r in recov)
                           else max((r["seconds"] for r in recov), default=0.0)),
        "isr": m["isr"],
        "fault_windows": [{"fault_id": f.fault_id, "name": f.name, "label": f.label,
                           "description": f.description, "target": f.target,
                           "start_us": f.start_us, "end_us": f.end_us, "healed": f.healed,
                           "inject_error": f.inject_error, "heal_error": f.heal_error,
                           "acked_during": m["acked_during"][i],
                           **m["fault_latencies"].get(f.fault_id, {})} for i, f in enumerate(tl.faults)],
        "throughput": {
            "seconds_active": len(active),
            "sent_per_s_mean": (sum(s["sent"] for s in active) / len(active)) if active else 0.0,
            "acked_per_s_mean": (sum(s["acked"] for s in active) / len(active)) if active else 0.0,
            "acked_per_s_max": max((s["acked"] for s in per_sec), default=0),
        },
        "per_second": per_sec,
        "consumer_lag": m["consumer_lag"],
        "run_start_us": sizes["run_start_us"], "run_end_us": sizes["run_end_us"],
        "partitions": [f"{t}-{p}" for t, p in partitions],
    }
