"""The pipeline family's checker: its four kinds (docs/history.md, "Pipelines") over the
drained output logs (`consumed` rows of phase drain on an output topic, with
source_record_id and key_count) and the records view of the inputs.

Which topics are a pipeline's input and output, and how it processes, come from the
run's `pipeline-config` events (written when its processors were started): a stored
run is judged by what it ran.

Every row names its pipeline and its `processing` (exactly_once | at_least_once), and
is explained by its input record: `topic`, `partition` and `offset` are the input's,
`explain_at_us` its acknowledgement, so the explainer charges the row to the fault the
input was written under (spark_reports/anomaly_output.py); the output's position is
`output_topic`, `output_partition`, `output_offset`. An output row names the processor
`instance` that wrote it and its transaction `txn` (from the output's value, through
consumed.pipeline_instance and pipeline_txn). A lost input has no output: its row names
the instance that last received it (`instance`, `read_at_us`, from the processors' own
`run` rows) and what became of that instance next (`instance_then`: a transaction
aborted, fenced, killed, died; `txn` the transaction that event names). Every row's
`txn_coordinator` names the transaction coordinator where the run found it: a
`txn_coordinator_of` fault on the row's instance slot (FindCoordinator for the slot's
transactional.id when the fault was injected: which broker, which fault); otherwise,
and between such faults, it is not observed: the observer follows the scenario's
topics, not `__transaction_state`.
"""
from __future__ import annotations

import json
import re
from collections import defaultdict
from dataclasses import dataclass

from pyspark.sql import DataFrame, Window
from pyspark.sql import functions as F

from families.records.checker import Inputs

INPUT_COLS = ("record_id", "producer", "seq", "key", "topic", "partition", "offset", "status",
              "send_ts_us", "ack_ts_us", "acked_by")
OUTPUT_COLS = ("pipeline", "processing", "output_topic", "output_partition", "output_offset",
               "source_record_id", "output_key", "key_count", "instance", "txn")
# what an instance did after it received an input that no output names
FATE_EVENTS = ("pipeline-txn-aborted", "pipeline-fenced", "pipeline-rebuild",
               "pipeline-instance-kill", "pipeline-instance-close", "workload-died")
TXN_COORDINATOR = ("not observed (the observer follows the scenario's topics' leaders, "
                   "not __transaction_state's)")


TXN_SELECTOR = re.compile(r"txn_coordinator_of\('([^']+)'\)")


def coordinators_found(events: list[dict]) -> dict[str, str]:
    """instance slot -> the transaction coordinators the run's `txn_coordinator_of`
    faults found for it (each fault's event names the transactional id it asked
    FindCoordinator about, and its target the broker). librdkafka's and Java's
    processors use <run id>-<slot>; a Kafka Streams slot's id is the application's
    slot-th listed one, not known to be that instance's, and is said so."""
    found = defaultdict(list)
    for e in events:
        if e.get("kind") != "fault":
            continue
        d = json.loads(e.get("detail") or "{}")
        m = TXN_SELECTOR.fullmatch(d.get("selector") or "")
        txn_id = d.get("transactional_id")
        if not (m and txn_id):
            continue
        slot = m.group(1)
        whose = "" if txn_id.endswith(f"-{slot}") else \
            " (a transactional id of the Streams application, not known to be this instance's)"
        found[slot].append(f"{e.get('target')} when {d.get('label') or e.get('name')} was "
                           f"injected (ts_us {e.get('ts_us')}; FindCoordinator for "
                           f"{txn_id}{whose})")
    return {slot: "; ".join(texts) + "; otherwise not observed" for slot, texts in found.items()}


@dataclass(frozen=True)
class PipelineParams:
    input_topic: str
    output_topic: str
    processing: str
    group_id: str


def pipeline_params(events: list[dict]) -> dict[str, PipelineParams]:
    """pipeline -> its topics and processing, from its last `pipeline-config` event."""
    out = {}
    for e in events:
        if e.get("name") == "pipeline-config":
            d = json.loads(e.get("detail") or "{}")
            out[d["pipeline"]] = PipelineParams(d["input_topic"], d["output_topic"],
                                                d["processing"],
                                                d.get("group_id") or d["pipeline"])
    return out


class PipelineFrames:
    """The drained outputs of every pipeline, and its acked inputs, built once."""

    def __init__(self, x: Inputs):
        self.params = pipeline_params(x.events)
        spark = x.consumed.sparkSession
        p = self.params
        self.pipes = spark.createDataFrame(
            [(n, q.input_topic, q.output_topic, q.processing, q.group_id) for n, q in p.items()],
            "pipeline string, input_topic string, output_topic string, processing string, "
            "pipeline_group string")
        self.outputs = (x.consumed.where((F.col("phase") == "drain")
                                         & F.col("source_record_id").isNotNull())
                        .join(F.broadcast(self.pipes), F.col("topic") == F.col("output_topic"))
                        .select("pipeline", "processing", "output_topic",
                                F.col("partition").alias("output_partition"),
                                F.col("offset").alias("output_offset"), "source_record_id",
                                F.col("key").alias("output_key"), "key_count",
                                F.col("pipeline_instance").alias("instance"),
                                F.col("pipeline_txn").alias("txn")))
        self.coordinators = spark.createDataFrame(
            sorted(coordinators_found(x.events).items()),
            "coordinator_slot string, txn_coordinator_found string")
        self.inputs = (x.views.records.where(F.col("producer").isNotNull())
                       .join(F.broadcast(self.pipes.select("pipeline", "processing",
                                                           F.col("input_topic").alias("topic"),
                                                           "output_topic")), "topic")
                       .select(*INPUT_COLS, "pipeline", "processing", "output_topic"))

    def with_input(self, rows: DataFrame) -> DataFrame:
        """Output rows with their input record's columns (null when it was never sent)."""
        inputs = self.inputs.drop("processing", "output_topic")
        return (rows.join(inputs, (rows["pipeline"] == inputs["pipeline"])
                          & (rows["source_record_id"] == inputs["record_id"]), "left")
                .select(*[inputs[c] for c in INPUT_COLS], *[rows[c] for c in rows.columns
                                                             if c not in INPUT_COLS],
                        inputs["ack_ts_us"].alias("explain_at_us"))
                .transform(self.with_coordinator))

    def with_coordinator(self, rows: DataFrame) -> DataFrame:
        """`txn_coordinator`: what the run found of the coordinator of the row's
        instance's transactions (its slot: the instance's name before a restart's .n)."""
        found = F.broadcast(self.coordinators)
        slot = F.regexp_extract(rows["instance"], r"^([^.]+)", 1)
        return (rows.join(found, slot == found["coordinator_slot"], "left")
                .withColumn("txn_coordinator", F.coalesce(F.col("txn_coordinator_found"),
                                                          F.lit(TXN_COORDINATOR)))
                .drop("coordinator_slot", "txn_coordinator_found"))

    def reads(self, x: Inputs) -> DataFrame:
        """(pipeline, record_id) -> the instance that last received the input (its
        processors' `run` rows in the pipeline's group) and when."""
        pipes = self.pipes.select("pipeline", F.col("input_topic").alias("topic"),
                                  F.col("pipeline_group").alias("group_id"))
        return (x.consumed.where((F.col("phase") == "run") & F.col("record_id").isNotNull())
                .join(F.broadcast(pipes), ["topic", "group_id"])
                .groupBy("pipeline", "record_id")
                .agg(F.max(F.struct("recv_ts_us", "consumer")).alias("last")))

    def fates(self, x: Inputs) -> DataFrame:
        """The instances' events that end what they had received: (instance, ts_us,
        event, txn)."""
        rows = []
        for e in x.events:
            if e.get("kind") == "client" and e.get("name") in FATE_EVENTS:
                d = json.loads(e.get("detail") or "{}")
                if d.get("pipeline") in self.params:
                    txn = d.get("txn")
                    rows.append((e.get("target"), int(e["ts_us"]), e["name"],
                                 int(txn) if txn is not None else None))
        return x.consumed.sparkSession.createDataFrame(
            rows, "fate_instance string, fate_ts_us long, fate string, fate_txn long")


def _frames(x: Inputs) -> PipelineFrames:
    return x.once("pipelines", PipelineFrames)


def _none(x: Inputs, kind: str, s: PipelineFrames, *extra: str) -> DataFrame | None:
    """No pipeline in the run: the kind's columns and no rows, planned as empty (and
    written from its schema, with no Spark job)."""
    if s.params:
        return None
    x.no_rows.add(kind)
    return s.with_input(s.outputs.limit(0)).select(
        "*", *[F.lit(None).cast("long").alias(c) for c in extra]).limit(0)


def pipeline_lost(x: Inputs) -> DataFrame:
    """An `acked` input record that no drained output of its pipeline names."""
    s = _frames(x)
    if not s.params:
        x.no_rows.add("pipeline_lost")
    named = s.outputs.select("pipeline", F.col("source_record_id").alias("record_id")).distinct()
    lost = (s.inputs.where(F.col("status") == "acked")
            .join(named, ["pipeline", "record_id"], "left_anti")
            .join(s.reads(x), ["pipeline", "record_id"], "left")
            .select(*INPUT_COLS, "pipeline", "processing", "output_topic",
                    F.col("last.consumer").alias("instance"),
                    F.col("last.recv_ts_us").alias("read_at_us")))
    fates = s.fates(x)
    after = (lost.join(F.broadcast(fates), (lost["instance"] == fates["fate_instance"])
                       & (fates["fate_ts_us"] >= lost["read_at_us"]), "left")
             .groupBy(*lost.columns)
             .agg(F.min(F.struct("fate_ts_us", "fate", "fate_txn")).alias("next")))
    rows = after.select(*lost.columns, F.col("next.fate_txn").alias("txn"),
                        F.col("next.fate").alias("instance_then"),
                        F.col("next.fate_ts_us").alias("instance_then_us"),
                        F.col("ack_ts_us").alias("explain_at_us")).transform(s.with_coordinator)
    return rows if s.params else rows.limit(0)


def pipeline_duplicate(x: Inputs) -> DataFrame:
    """An input named by outputs at two or more positions of its pipeline's drained
    output log; every such output is a row (`copies`: how many)."""
    s = _frames(x)
    empty = _none(x, "pipeline_duplicate", s, "copies")
    if empty is not None:
        return empty
    per = Window.partitionBy("pipeline", "source_record_id")
    rows = (s.outputs.withColumn("copies", F.count(F.lit(1)).over(per))
            .where(F.col("copies") >= 2))
    return s.with_input(rows)


def _state(x: Inputs) -> DataFrame:
    """Each keyed output with the count its key's previous output (in output-log order:
    partition, offset) carried; 0 before the first."""
    s = _frames(x)
    order = Window.partitionBy("pipeline", "output_key").orderBy("output_partition",
                                                                 "output_offset")
    return (s.outputs.where(F.col("key_count").isNotNull() & F.col("output_key").isNotNull())
            .withColumn("previous_count", F.coalesce(F.lag("key_count", 1).over(order),
                                                     F.lit(0).cast("long"))))


def state_gap(x: Inputs) -> DataFrame:
    """Per key, in output-log order, a key_count more than one above the previous: an
    input counted that no committed output stands for."""
    s = _frames(x)
    empty = _none(x, "state_gap", s, "previous_count")
    if empty is not None:
        return empty
    return s.with_input(_state(x).where(F.col("key_count") > F.col("previous_count") + 1))


def state_repeat(x: Inputs) -> DataFrame:
    """Per key, in output-log order, a key_count not above the previous: an input
    counted twice, or a count rebuilt short."""
    s = _frames(x)
    empty = _none(x, "state_repeat", s, "previous_count")
    if empty is not None:
        return empty
    return s.with_input(_state(x).where(F.col("key_count") <= F.col("previous_count")))



# -- Jepsen's checks inside one transaction (docs/history.md, "Pipelines") --------------

WRITER = ("pipeline", "instance", "txn")


def _indexed_outputs(s: PipelineFrames) -> DataFrame:
    """The drained outputs with their place among what read_committed shows of their
    partition (`output_index`, from 0): offsets left by aborted transactions and
    markers are not places."""
    order = Window.partitionBy("pipeline", "output_partition").orderBy("output_offset")
    return s.outputs.withColumn("output_index", F.row_number().over(order) - 1)


def int_send_skip(x: Inputs) -> DataFrame:
    """Two outputs of one transaction (instance, txn) to one output partition, with a
    committed output of another writer between them: the drained log skips from one to
    the other (`delta` places; `skipped_writers` the writers of what lies between). The
    later output is the row."""
    s = _frames(x)
    empty = _none(x, "int_send_skip", s, "previous_offset", "delta")
    if empty is not None:
        return empty.select("*", F.array().cast("array<string>").alias("skipped_writers"))
    out = _indexed_outputs(s).where(F.col("instance").isNotNull() & F.col("txn").isNotNull())
    per_txn = Window.partitionBy(*WRITER, "output_partition").orderBy("output_index")
    pairs = (out.withColumn("previous_index", F.lag("output_index").over(per_txn))
             .withColumn("previous_offset", F.lag("output_offset").over(per_txn))
             .withColumn("delta", F.col("output_index") - F.col("previous_index"))
             .where(F.col("delta") > 1))
    between = out.select("pipeline", F.col("output_partition").alias("bp"),
                         F.col("output_index").alias("bi"),
                         F.concat_ws(" txn ", "instance", F.col("txn").cast("string"))
                         .alias("writer"))
    skipped = (pairs.join(between, (pairs["pipeline"] == between["pipeline"])
                          & (pairs["output_partition"] == between["bp"])
                          & (between["bi"] > pairs["previous_index"])
                          & (between["bi"] < pairs["output_index"]))
               .groupBy(pairs["pipeline"], "output_partition", "output_offset")
               .agg(F.array_sort(F.collect_set("writer")).alias("skipped_writers")))
    rows = pairs.join(skipped, ["pipeline", "output_partition", "output_offset"], "left")
    return s.with_input(rows.drop("previous_index", "output_index"))


def _input_index(x: Inputs, s: PipelineFrames) -> DataFrame:
    """Each drained input record's place in its partition's read_committed log
    (`input_index`, from 0; a record at two places: its first)."""
    topics = s.pipes.select("pipeline", F.col("input_topic").alias("topic"))
    log = (x.consumed.where((F.col("phase") == "drain") & F.col("record_id").isNotNull())
           .join(F.broadcast(topics), "topic")
           .select("pipeline", "topic", "partition", "offset", "record_id").distinct())
    order = Window.partitionBy("pipeline", "topic", "partition").orderBy("offset")
    return log.withColumn("input_index", F.dense_rank().over(order) - 1)


def int_poll_skip(x: Inputs) -> DataFrame:
    """Two inputs of one input partition read in one committed transaction (the inputs
    its outputs name; in the order it wrote them) between which the input log holds
    records the transaction did not read (`delta` places; `skipped` their record_ids,
    the first ten). The later input's output is the row."""
    s = _frames(x)
    empty = _none(x, "int_poll_skip", s, "input_partition", "input_offset",
                  "previous_input_offset", "delta")
    if empty is not None:
        return empty.select("*", F.array().cast("array<string>").alias("skipped"))
    idx = _input_index(x, s)
    first = (idx.groupBy("pipeline", "record_id")
             .agg(F.min(F.struct("input_index", "partition", "offset")).alias("at")))
    reads = (s.outputs.where(F.col("instance").isNotNull() & F.col("txn").isNotNull())
             .join(first.withColumnRenamed("record_id", "source_record_id"),
                   ["pipeline", "source_record_id"])
             .select(*OUTPUT_COLS, F.col("at.partition").alias("input_partition"),
                     F.col("at.offset").alias("input_offset"),
                     F.col("at.input_index").alias("input_index")))
    per_txn = Window.partitionBy(*WRITER, "input_partition").orderBy("output_partition",
                                                                     "output_offset")
    pairs = (reads.withColumn("previous_index", F.lag("input_index").over(per_txn))
             .withColumn("previous_input_offset", F.lag("input_offset").over(per_txn))
             .withColumn("delta", F.col("input_index") - F.col("previous_index"))
             .where(F.col("delta") > 1))
    gap = idx.select("pipeline", F.col("partition").alias("gp"), F.col("input_index").alias("gi"),
                     F.struct(F.col("input_index").alias("i"), "record_id").alias("g"))
    skipped = (pairs.join(gap, (pairs["pipeline"] == gap["pipeline"])
                          & (pairs["input_partition"] == gap["gp"])
                          & (gap["gi"] > pairs["previous_index"])
                          & (gap["gi"] < pairs["input_index"]))
               .groupBy(pairs["pipeline"], "output_partition", "output_offset")
               .agg(F.slice(F.transform(F.array_sort(F.collect_list("g")),
                                        lambda g: g["record_id"]), 1, 10).alias("skipped")))
    rows = pairs.join(skipped, ["pipeline", "output_partition", "output_offset"], "left")
    return s.with_input(rows.drop("previous_index", "input_index"))
