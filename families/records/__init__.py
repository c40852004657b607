"""The records family: producers (ours and Kafka's Java VerifiableProducer), consumer
groups (ours and Kafka's VerifiableConsumer) and the final drain; the history's
produced, consumed and commits tables; the checker over the records views
(views.py, checker.py); its kinds (kinds.py); its metrics (metrics.py: latencies,
throughput, lag, unavailability, recovery, ISR); its section (section.py); its clients
(clients.py)."""
from __future__ import annotations

from families.base import Family, SummaryKeys
from families.records import section
from families.records.kinds import KINDS
from families.records.metrics import records_metrics


def _start(ctx, workload):
    from families.records.clients import Workloads  # the clients' imports: only a live run's
    return Workloads(ctx, workload)


def _words(summary: SummaryKeys) -> list[str]:
    c = summary.get("counts") or {}
    if not c:
        return []
    return [f"{c.get('sent', 0)} records sent: {c.get('acked', 0)} acknowledged, "
            f"{c.get('failed', 0)} failed, {c.get('indeterminate', 0)} of unknown outcome; "
            f"{c.get('consumed_run', 0)} deliveries to consumer groups during the run, "
            f"{c.get('consumed_drain', 0)} records read by the final drain."]


FAMILY = Family(
    name="records", title="Records: producers, consumer groups and the drain",
    kinds=KINDS,
    # every scenario has producers (the builder refuses one without)
    named_by=lambda workload: True,
    facts=section.facts, fact_docs=section.FACT_DOCS, start=_start, words=_words,
    metrics=records_metrics)
