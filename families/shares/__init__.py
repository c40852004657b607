"""The share-group family (KIP-932, Kafka's queues): share groups of members on
confluent-kafka's ShareConsumer (workloads/share_member.py), each delivery and
acknowledgement in `share_deliveries` (workloads/share_log.py); its section
(section.py), its clients and final share drain (clients.py), its checker and kinds
(checker.py, kinds.py), its metrics (metrics.py) and words.
"""
from __future__ import annotations

from families.base import Family, RunData, SummaryKeys
from families.shares.kinds import KINDS
from families.shares.metrics import COLUMNS, derived, share_metrics
from families.shares.section import FACT_DOCS, facts


def _start(ctx, workload):
    from families.shares.clients import ShareWorkloads  # confluent-kafka's admin: only when run
    return ShareWorkloads(ctx, workload)


def _metrics(data: RunData) -> dict:
    groups = share_metrics(data.read("share_deliveries", COLUMNS), data.events)
    return {"summary": {"share_groups": groups},
            "counts": {**derived(groups),
                       "share_unresolved": sum(g["unresolved"] for g in groups.values()),
                       "share_archived": sum(g["archived"] for g in groups.values())}}


def _words(summary: SummaryKeys) -> list[str]:
    return [group_words(g, m) for g, m in (summary.get("share_groups") or {}).items()]


def group_words(g: str, m: dict) -> str:
    """"orders-2: 12 004 deliveries of 11 800 records; …" """
    parts = [f"{g}: {m['deliveries']} deliveries of {m['positions']} records "
             f"({m['deliveries_drain']} by the final drain)"]
    for r in m.get("returns") or []:
        # members stopped at the run's end: what they held waits for the final drain
        if r["held"] and r["how"] != "stop":
            parts.append(_return_words(r))
    acc = m.get("results", {}).get("accept", {})
    parts.append(f"{acc.get('ok', 0)} accepts confirmed, {acc.get('error', 0)} refused, "
                 f"{acc.get('unknown', 0)} unanswered")
    gap = m.get("longest_gap")
    if gap and gap["seconds"] >= 1:
        parts.append(f"no member received anything for {gap['seconds']} s at its longest")
    parts.append(f"{m['redelivered']} redeliveries; lock {m['lock_ms']} ms, delivery limit "
                 f"{m['delivery_count_limit']}")
    return "; ".join(parts) + "."


def _return_words(r: dict) -> str:
    """"member s1 was killed holding 21 records (21 undecided): 21 came back 0.79 s
    (median), 0.79 s (max) after" """
    verb = "was killed" if r["how"] == "kill" else "closed"
    text = f"member {r['member']} {verb} holding {r['held']} records ({r['undecided']} undecided)"
    if r["returned"]:
        text += f": {r['returned']} came back {r['p50_s']} s (median), {r['max_s']} s (max) after"
    if r["never_returned"]:
        text += (f"{',' if r['returned'] else ':'} {r['never_returned']} never came back"
                 + (" (acknowledged with no answer, never redelivered: applied)" if not r["undecided"] else ""))
    return text


def _series(summary: SummaryKeys) -> list[tuple]:
    return [(f"Share group {g}: deliveries and acknowledgements", "records / s",
             m.get("per_second") or [], ("deliveries", "accept", "release", "reject"))
            for g, m in (summary.get("share_groups") or {}).items()]


FAMILY = Family(
    name="shares", title="Share groups (queues, KIP-932)",
    kinds=KINDS,
    named_by=lambda workload: bool(getattr(workload, "share_groups", ())),
    facts=facts, fact_docs=FACT_DOCS, start=_start, words=_words, metrics=_metrics, series=_series,
    counts=("share_late_returns", "max_share_return_s", "share_unresolved", "share_archived",
            "share_held_returns"),
    # a churn that only ever hit members holding nothing returned no record
    defaults=("share_held_returns > 0 when share_churned",))
