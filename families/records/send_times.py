"""Whether a run's producers recorded when they sent.

Kafka's VerifiableProducer reports no send time: workloads/java_clients.py writes its
rows with send_ts_us = ack_ts_us. Its ack latency then reads 0, its end-to-end latency
is measured from the ack, and no send of it is ever pending, so no partition it writes
is ever unavailable. When no producer of a run recorded send times, the latencies,
the unavailability and the recovery drawn from it are unknown: summary["metrics"] says
why under SEND_TIMES_UNKNOWN, their numbers are null, the report says "unknown" and an
expectation on them is not judged. A run with any other producer is measured as it
always was (the key is absent).
"""
from __future__ import annotations

import json
from typing import Any

SEND_TIMES_UNKNOWN = "send_times_unknown"
# the producers (the `tool` of their producer-start event) that report no send time
NO_SEND_TIMES = ("VerifiableProducer",)
NO_SAMPLES = {"p50": None, "p99": None, "p999": None, "max": None, "n": 0}


def why_unknown(events: list[dict]) -> str | None:
    """Why the run's send times are unknown: every producer that started (its
    producer-start event) reports none; None when one recorded them, or when no
    producer-start says (a history from before that event: measured as it was)."""
    tools: dict[str, set] = {}
    for e in events:
        if e.get("kind") == "client" and e.get("name") == "producer-start":
            tool = json.loads(e.get("detail") or "{}").get("tool")
            tools.setdefault(str(e.get("target")), set()).add(tool)
    if not tools or any(t not in NO_SEND_TIMES for ts in tools.values() for t in ts):
        return None
    return (f"no producer in the run recorded send times (Kafka's VerifiableProducer "
            f"reports none: {', '.join(sorted(tools))})")


def unknown_in(metrics: dict[str, Any]) -> str | None:
    """summary["metrics"]' reason its latency and unavailability are unknown, or None."""
    return metrics.get(SEND_TIMES_UNKNOWN)


def without_send_times(doc: dict[str, Any], why: str) -> dict[str, Any]:
    """summary["metrics"] with what send times measure made unknown: the latencies
    (run-wide, per second, per fault), the unavailability windows and the recovery
    drawn from them (a fault that was not injected keeps its row: it says so)."""
    unknown_partition = {"seconds": None, "after_heal_s": None, "unavailable_s": None}
    return {
        **doc,
        SEND_TIMES_UNKNOWN: why,
        "ack_latency_ms": dict(NO_SAMPLES), "e2e_latency_ms": dict(NO_SAMPLES),
        "unavailability": [], "max_unavailability_s": None, "max_recovery_s": None,
        "recovery": [r if r.get("inject_error") else {
            **r, "seconds": None, "after_heal_s": None, "unavailable_s": None, "windows": None,
            "no_partition_unavailable": None, "never_recovered": [],
            "partitions": {k: dict(unknown_partition) for k in r.get("partitions") or {}}}
            for r in doc.get("recovery") or []],
        "fault_windows": [{**f, "ack_latency_ms": dict(NO_SAMPLES),
                           "e2e_latency_ms": dict(NO_SAMPLES)}
                          for f in doc.get("fault_windows") or []],
        "per_second": [{**s, "ack_p50_ms": None, "ack_p99_ms": None, "ack_max_ms": None}
                       for s in doc.get("per_second") or []],
    }
