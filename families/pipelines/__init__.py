"""The pipeline family (issue 36): read, transform, write. Our verifiable producer
writes an input topic; a processor reads it (read_committed, in a consumer group),
writes one output per input carrying the input's record_id and its key's count, and
commits the input offsets, in the same transaction (exactly_once) or after
(at_least_once). Its section (section.py), its clients (clients.py: the librdkafka
processor of workloads/pipeline_processor.py, the one on Kafka's Java clients of
workloads/java_pipeline.py, or the Kafka Streams application of
workloads/java_streams.py), its checker and kinds (checker.py, kinds.py: lost, duplicate,
state gap and repeat, and Jepsen's contiguity checks inside one transaction,
int_send_skip and int_poll_skip), its words. The drain reads the output
topics like any other and fills consumed.source_record_id, key_count, pipeline_instance
and pipeline_txn (who wrote an output, in which transaction: what explains a row).
"""
from __future__ import annotations

import json

from families.base import Family, RunData, SummaryKeys
from families.pipelines.kinds import KINDS
from families.pipelines.section import FACT_DOCS, facts

STAT_EVENTS = ("pipeline-stats", "pipeline-closed")


def _start(ctx, workload):
    from families.pipelines.clients import PipelineWorkloads  # confluent-kafka: only when run
    return PipelineWorkloads(ctx, workload)


def pipeline_metrics(events: list[dict]) -> dict[str, dict]:
    """pipeline -> transactions begun, committed and aborted, outputs written (each
    instance's last stats), restores, fenced instances, kills and restarts."""
    last: dict[tuple[str, str], dict] = {}
    out: dict[str, dict] = {}
    for e in sorted(events, key=lambda e: e["ts_us"]):
        if e.get("kind") != "client" or not str(e.get("name", "")).startswith("pipeline-"):
            continue
        d = json.loads(e.get("detail") or "{}")
        name = d.get("pipeline")
        if name is None:
            continue
        m = out.setdefault(name, {"processing": None, "instances": 0, "kills": 0, "restarts": 0,
                                  "fenced": 0, "rebalances": 0, "aborted_events": 0})
        kind = e["name"]
        if kind == "pipeline-config":
            m["processing"] = d.get("processing")
        elif kind in STAT_EVENTS:
            last[(name, e.get("target"))] = d
        m["instances"] += kind == "pipeline-instance-start"
        m["kills"] += kind == "pipeline-instance-kill"
        m["restarts"] += kind == "pipeline-instance-restart"
        m["fenced"] += kind == "pipeline-fenced"
        m["rebalances"] += kind == "pipeline-rebalance" and d.get("type") == "assigned"
        m["aborted_events"] += kind == "pipeline-txn-aborted"
    for (name, _), d in last.items():
        for k in ("begun", "committed", "aborted", "outputs", "restores"):
            out[name][k] = out[name].get(k, 0) + int(d.get(k) or 0)
    return out


def _metrics(data: RunData) -> dict:
    pipes = pipeline_metrics(data.events)
    return {"summary": {"pipelines": pipes},
            "counts": {"pipeline_txn_aborted": sum(m.get("aborted", 0) for m in pipes.values())}}


def _words(summary: SummaryKeys) -> list[str]:
    return [f"{name} ({m.get('processing')}): {m.get('outputs', 0)} outputs, "
            f"{m.get('committed', 0)} transactions committed, {m.get('aborted', 0)} aborted "
            f"(of the instances' last stats; a killed instance's last ones are lost with it); "
            f"{m['instances']} instances started, {m['kills']} killed, {m['fenced']} fenced; "
            f"{m['rebalances']} assignments, each rebuilding its counts from the output topic."
            for name, m in (summary.get("pipelines") or {}).items()]


FAMILY = Family(
    name="pipelines", title="Pipelines (read, transform, write)",
    kinds=KINDS,
    named_by=lambda workload: bool(getattr(workload, "pipelines", ())),
    facts=facts, fact_docs=FACT_DOCS, start=_start, words=_words, metrics=_metrics,
    counts=("pipeline_txn_aborted",))
