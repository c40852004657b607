"""The pipeline family (issue 36): read, transform, write. Our verifiable producer
writes an input topic; a processor reads it (read_committed, in a consumer group),
writes one output per input carrying the input's record_id and its key's count, and
commits the input offsets, in the same transaction (exactly_once) or after
(at_least_once). Its section (section.py), its clients (clients.py: the librdkafka
processor of workloads/pipeline_processor.py, the one on Kafka's Java clients of
workloads/java_pipeline.py, or the Kafka Streams application of
workloads/java_streams.py), its checker and kinds (checker.py, kinds.py: lost, duplicate,
state gap and repeat, and Jepsen's contiguity checks inside one transaction,
int_send_skip and int_poll_skip), its metrics (metrics.py) and words. The drain reads the output
topics like any other and fills consumed.source_record_id, key_count, pipeline_instance
and pipeline_txn (who wrote an output, in which transaction: what explains a row).
"""
from __future__ import annotations

from families.base import Family, RunData, SummaryKeys
from families.pipelines.kinds import KINDS
from families.pipelines.metrics import PipelineMetrics, pipeline_metrics
from families.pipelines.section import FACT_DOCS, facts


def _start(ctx, workload):
    from families.pipelines.clients import PipelineWorkloads  # confluent-kafka: only when run
    return PipelineWorkloads(ctx, workload)


def _metrics(data: RunData) -> dict:
    pipes = pipeline_metrics(data.events)
    return {"summary": {"pipelines": {name: m.to_dict() for name, m in pipes.items()}},
            "counts": {"pipeline_txn_aborted": sum(m.aborted or 0 for m in pipes.values())}}


def _words(summary: SummaryKeys) -> list[str]:
    return [pipeline_words(name, PipelineMetrics.from_dict(doc))
            for name, doc in (summary.get("pipelines") or {}).items()]


def pipeline_words(name: str, m: PipelineMetrics) -> str:
    return (f"{name} ({m.processing}): {m.outputs or 0} outputs, "
            f"{m.committed or 0} transactions committed, {m.aborted or 0} aborted "
            f"(of the instances' last stats; a killed instance's last ones are lost with it); "
            f"{m.instances} instances started, {m.kills} killed, {m.fenced} fenced; "
            f"{m.rebalances} assignments, each rebuilding its counts from the output topic.")


FAMILY = Family(
    name="pipelines", title="Pipelines (read, transform, write)",
    kinds=KINDS,
    named_by=lambda workload: bool(getattr(workload, "pipelines", ())),
    facts=facts, fact_docs=FACT_DOCS, start=_start, words=_words, metrics=_metrics,
    counts=("pipeline_txn_aborted",))
