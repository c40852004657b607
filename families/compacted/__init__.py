"""The compacted-topic family (issue 38): keyed writes with a per-key version and
tombstones on compacted topics (our verifiable producer, workloads/producer.py, with
`tombstone_rate`); a drain that rolls each partition's active segment, waits for the log
cleaner's checkpoint to pass it, and reads each topic whole (drain.py, clients.py); its
section (section.py), its checker and kinds (checker.py, kinds.py), its words.

Its writes are judged by the records family too (duplicates, order, metrics), except
for `lost`: the cleaner removes older values by design (families/records/views.py).
"""
from __future__ import annotations

import json

from families.base import Family, RunData, SummaryKeys
from families.compacted.kinds import KINDS
from families.compacted.section import (
    CLEANED_EVENT,
    CONFIG_EVENT,
    FACT_DOCS,
    facts,
)


def _start(ctx, workload):
    from families.compacted.clients import CompactedWorkloads  # confluent-kafka: only when run
    return CompactedWorkloads(ctx, workload)


def cleaner_metrics(events: list[dict], produced: list[dict]) -> dict[str, dict]:
    """topic -> writes, tombstones, acked, the cleaner wait and its partitions."""
    writers = {e["target"]: json.loads(e.get("detail") or "{}") for e in events
               if e.get("kind") == "client" and e.get("name") == CONFIG_EVENT}
    out: dict[str, dict] = {}
    for w, d in writers.items():
        out[d["topic"]] = {"writer": w, "writes": 0, "acked": 0, "tombstones_acked": 0,
                           "indeterminate": 0, "cleaner_passed": None, "waited_s": None,
                           "partitions": []}
    by_writer = {w: d["topic"] for w, d in writers.items()}
    for r in produced:
        t = by_writer.get(r["producer"])
        if t is None:
            continue
        m = out[t]
        m["writes"] += 1
        m["acked"] += r["status"] == "acked"
        m["tombstones_acked"] += bool(r["status"] == "acked" and r["tombstone"])
        m["indeterminate"] += r["status"] == "indeterminate"
    for e in events:
        if e.get("kind") == "client" and e.get("name") == CLEANED_EVENT:
            d = json.loads(e.get("detail") or "{}")
            if d.get("topic") in out:
                out[d["topic"]].update(cleaner_passed=d.get("passed"), waited_s=d.get("waited_s"),
                                       partitions=d.get("partitions") or [],
                                       read=d.get("records"))
    return out


def _metrics(data: RunData) -> dict:
    topics = cleaner_metrics(data.events, data.read("produced", ("producer", "status", "tombstone")))
    waits = [m["waited_s"] for m in topics.values() if m["waited_s"] is not None]
    return {"summary": {"compacted": topics},
            "counts": {"compacted_cleaner_not_passed": sum(m["cleaner_passed"] is False
                                                           for m in topics.values()),
                       "max_cleaner_wait_s": max(waits) if waits else 0}}


def _words(summary: SummaryKeys) -> list[str]:
    out = []
    for topic, m in (summary.get("compacted") or {}).items():
        parts = [p for p in m["partitions"] if p.get("passed")]
        cleaner = ("the drain did not run" if m["cleaner_passed"] is None else
                   f"the cleaner passed {len(parts)} of {len(m['partitions'])} partitions "
                   f"(checkpoint at or past the roll offset) after {m['waited_s']} s")
        out.append(f"{topic} (writer {m['writer']}): {m['writes']} writes, {m['acked']} "
                   f"acknowledged ({m['tombstones_acked']} tombstones), {m['indeterminate']} of "
                   f"unknown outcome; {cleaner}; the drain read {m.get('read', 0)} records.")
    return out


FAMILY = Family(
    name="compacted", title="Compacted topics",
    kinds=KINDS,
    named_by=lambda workload: bool(getattr(workload, "compacted", ())),
    facts=facts, fact_docs=FACT_DOCS, start=_start, words=_words, metrics=_metrics,
    counts=("compacted_cleaner_not_passed", "max_cleaner_wait_s"),
    # a topic whose cleaner never passed its roll offset judged a log nothing compacted
    defaults=("compacted_cleaner_not_passed == 0",))
