"""The anomaly computation: the spec's counting rules, literally, in Spark.

Three intermediate views carry every rule (each computed once and persisted):

- `records`  one row per record_id, produced ⟗ consumed: status, transaction,
             the record's *position* and how it was consumed.
- `offsets`  one row per consumed (topic, partition, offset): whether more than
             one record_id was seen there, whether the drain saw it.
- `groups`   one row per (group, topic, partition, offset) delivered in `run`.

Each anomaly is a filter or small join of those; its offending rows are
written straight to Parquet by Spark and the count is taken from what was
written, so summary.json and report/anomalies/ cannot disagree. Only counts
and a few sample rows come back to the driver. The aggregations over the big
tables use fixed-width buffers (longs, 64-bit hashes), which Spark runs as hash
aggregations, except the per-record position minimum (a struct; see below).

Readings of the spec chosen here:
- position: the drain's (topic, partition, offset) for the record, else the
  first position any consumer saw it at; "first" = smallest recv_ts_us, ties
  broken by (topic, partition, offset). Positions always include the topic.
- divergent: a (topic, partition, offset) at which more than one distinct
  record_id was delivered, over all consumers and phases (the drain included);
  a null record_id (a payload the harness did not write) counts as a value of
  its own. Distinctness is decided on two independent 64-bit hashes of the
  record_id (a false "same" needs both to collide, ~2^-128 per pair).
- overwritten: likewise a null record_id at the acked offset is "another record".
- unexpected ignores rows whose record_id is null (no record_id to count);
  they are counted as `consumed_foreign` instead.
- skipped: commits with ok = true, a non-null group_id and consumer != 'drain';
  an offset is skipped when the drain saw it, it is below the group's highest
  accepted commit, no `run` consumer of that group received it, and it is not
  a record of an aborted transaction (the drain's lowest record_id there) that
  a read_committed group (any of its run rows read_committed) must not see.
- redelivered: only rows with a non-null group_id ("to one group").

Rows written per kind (count rule in COUNT_BY): lost, recovered, unexpected,
aborted_read, reordered: one row per record; overwritten: one row per
(record, other delivery at its offset); duplicate and divergent: every
delivery involved; skipped and redelivered: one row per (group, position).
"""
from __future__ import annotations

from dataclasses import dataclass

from pyspark import StorageLevel
from pyspark.sql import DataFrame, Window
from pyspark.sql import functions as F

from spark_reports.storage import RunLocation

KINDS = ("lost", "overwritten", "duplicate", "reordered", "unexpected", "divergent",
         "aborted_read", "skipped", "redelivered", "recovered")

# How each kind is counted from its written rows: distinct keys, or a sum.
COUNT_BY: dict[str, tuple[str, tuple[str, ...]]] = {
    "lost": ("distinct", ("record_id",)),
    "overwritten": ("distinct", ("record_id",)),
    "duplicate": ("distinct", ("record_id",)),
    "reordered": ("distinct", ("record_id",)),
    "unexpected": ("distinct", ("record_id",)),
    "divergent": ("distinct", ("topic", "partition", "offset")),
    "aborted_read": ("distinct", ("record_id",)),
    "skipped": ("distinct", ("group_id", "topic", "partition", "offset")),
    "redelivered": ("sum", ("extra_deliveries",)),
    "recovered": ("distinct", ("record_id",)),
}

SAMPLE_ROWS = 20


@dataclass
class Views:
    records: DataFrame
    offsets: DataFrame
    groups: DataFrame

    def unpersist(self) -> None:
        for df in (self.records, self.offsets, self.groups):
            df.unpersist()


# A record's position is the minimum of (rank, position) per record_id, with
#   rank = not_drain << 52 | seen_us.
# When the topics and bounds allow, the position is packed into one long
#   topic_id << 56 | partition << 40 | offset
# (topic_id = the topic's rank by name, so ties still break by (topic, partition,
# offset)) and the minimum is over a struct of two longs; otherwise over
# (rank, topic, partition, offset). Measured at 1 M records, the (rank, topic,
# partition, offset) struct minimum built this view in 84 s against 203 s for the
# former single DECIMAL(38,0) key (same loaded machine, one run each): decimal
# arithmetic per row cost more than the sort-based aggregation it avoided.
MAX_TOPICS, MAX_PARTITION, MAX_OFFSET = 127, (1 << 16) - 1, (1 << 40) - 1


def topic_catalog(consumed: DataFrame) -> list[str] | None:
    """Sorted topics if positions fit the packed key, else None."""
    rows = consumed.groupBy("topic").agg(
        F.min("partition").alias("p0"), F.max("partition").alias("p1"),
        F.min("offset").alias("o0"), F.max("offset").alias("o1")).collect()
    if len(rows) > MAX_TOPICS or any(
            r["p0"] < 0 or r["p1"] > MAX_PARTITION or r["o0"] < 0 or r["o1"] > MAX_OFFSET
            for r in rows):
        return None
    return sorted(r["topic"] for r in rows)


def _per_record(positions: DataFrame, topics: list[str] | None) -> DataFrame:
    rank = ((F.col("drain_first_us").isNull().cast("long") * (1 << 52))
            + F.coalesce("drain_first_us", "first_us"))
    common = [F.count(F.lit(1)).alias("n_positions"),
              F.max("read_committed").alias("read_committed_seen"),
              F.min("first_run_us").alias("first_run_recv_us"),
              F.sum("deliveries").alias("deliveries")]
    keep = ["record_id", "n_positions", "read_committed_seen", "first_run_recv_us", "deliveries"]
    if topics is None:
        pos_key = F.struct(rank.alias("rank"), F.col("topic").alias("topic"),
                           F.col("partition").alias("partition"), F.col("offset").alias("offset"))
        return positions.groupBy("record_id").agg(*common, F.min(pos_key).alias("pos")).select(
            *keep, F.col("pos.topic").alias("pos_topic"),
            F.col("pos.partition").alias("pos_partition"), F.col("pos.offset").alias("pos_offset"),
            (F.col("pos.rank") < (1 << 52)).alias("pos_from_drain"))
    names = F.array(*[F.lit(t) for t in topics])
    packed = ((F.array_position(names, F.col("topic")) - 1) * (1 << 56)
              + F.col("partition").cast("long") * (1 << 40) + F.col("offset"))
    best = F.min(F.struct(rank.alias("rank"), packed.alias("packed"))).alias("best")
    low = F.col("best.packed")
    return positions.groupBy("record_id").agg(*common, best).select(
        *keep, F.element_at(names, F.shiftright(low, 56).cast("int") + 1).alias("pos_topic"),
        (F.shiftright(low, 40).bitwiseAND(MAX_PARTITION)).cast("int").alias("pos_partition"),
        low.bitwiseAND(MAX_OFFSET).alias("pos_offset"),
        (F.col("best.rank") < (1 << 52)).alias("pos_from_drain"))


def _h1():
    return F.when(F.col("record_id").isNotNull(), F.xxhash64("record_id"))


def _h2():
    return F.when(F.col("record_id").isNotNull(), F.xxhash64(F.lit("harness"), "record_id"))


def build_views(produced: DataFrame, consumed: DataFrame, topics: list[str] | None) -> Views:
    # Shuffled once by record_id: the per-position and the per-record aggregation
    # (and the join with produced) then all run on that one partitioning.
    c = consumed.where(F.col("record_id").isNotNull()).repartition("record_id")
    is_drain = F.col("phase") == "drain"
    positions = c.groupBy("record_id", "topic", "partition", "offset").agg(
        F.min(F.when(is_drain, F.col("recv_ts_us"))).alias("drain_first_us"),
        F.min("recv_ts_us").alias("first_us"),
        F.min(F.when(F.col("phase") == "run", F.col("recv_ts_us"))).alias("first_run_us"),
        F.max((F.col("isolation") == "read_committed").cast("int")).alias("read_committed"),
        F.count(F.lit(1)).alias("deliveries"))
    p = produced.select("record_id", "producer", "seq", "key", "topic", "partition", "offset",
                        "status", "error", "send_ts_us", "ack_ts_us", "txn_id", "txn_seq",
                        "txn_outcome")
    records = p.join(_per_record(positions, topics), "record_id", "full_outer")

    # Which record_ids were seen at an offset, as min/max of two independent 64-bit
    # hashes (fixed-width, so a hash aggregation): two different record_ids look the
    # same only if both hashes collide (~2^-128).
    offsets = consumed.groupBy("topic", "partition", "offset").agg(
        F.min(_h1()).alias("h1_min"), F.max(_h1()).alias("h1_max"),
        F.min(_h2()).alias("h2_min"), F.max(_h2()).alias("h2_max"),
        F.max(F.col("record_id").isNull().cast("int")).alias("has_foreign"),
        F.max(is_drain.cast("int")).alias("drain_seen"))

    groups = (consumed.where((F.col("phase") == "run") & F.col("group_id").isNotNull())
              .groupBy("group_id", "topic", "partition", "offset")
              .agg(F.count(F.lit(1)).alias("deliveries")))

    level = StorageLevel.MEMORY_AND_DISK
    return Views(records.persist(level), offsets.persist(level), groups.persist(level))


def anomaly_frames(v: Views, consumed: DataFrame, commits: DataFrame) -> dict[str, DataFrame]:
    """Every offending row per kind (not yet computed: Spark writes them)."""
    r = v.records
    produced_cols = ["record_id", "producer", "seq", "key", "topic", "partition", "offset",
                     "status", "error", "send_ts_us", "ack_ts_us", "txn_id", "txn_seq",
                     "txn_outcome"]
    pos_cols = ["pos_topic", "pos_partition", "pos_offset", "pos_from_drain"]
    consumed_at = F.col("n_positions").isNotNull()
    out: dict[str, DataFrame] = {}

    out["lost"] = r.where((F.col("status") == "acked") & ~consumed_at).select(*produced_cols)

    out["recovered"] = r.where((F.col("status") == "indeterminate") & consumed_at).select(
        *produced_cols, *pos_cols, "deliveries")

    out["unexpected"] = r.where(consumed_at & (
        F.col("producer").isNull() | ((F.col("status") == "failed") & F.col("txn_id").isNull()))
    ).select(F.when(F.col("producer").isNull(), F.lit("never sent"))
             .otherwise(F.lit("failed outside a transaction")).alias("reason"),
             *produced_cols, *pos_cols, "deliveries")

    out["aborted_read"] = r.where((F.col("read_committed_seen") == 1)
                                  & (F.col("txn_outcome") == "aborted")).select(
        *produced_cols, *pos_cols)

    out["duplicate"] = (r.where(F.col("n_positions") >= 2)
                        .select("record_id", "producer", "seq", "status", "n_positions")
                        .join(consumed.select("record_id", "topic", "partition", "offset",
                                              "consumer", "group_id", "phase", "recv_ts_us"),
                              "record_id"))

    earlier = (Window.partitionBy("producer", "pos_topic", "pos_partition").orderBy("seq")
               .rowsBetween(Window.unboundedPreceding, -1))
    out["reordered"] = (r.where(F.col("producer").isNotNull() & consumed_at)
                        .withColumn("earlier_max_offset", F.max("pos_offset").over(earlier))
                        .where(F.col("pos_offset") < F.col("earlier_max_offset"))
                        .select("record_id", "producer", "seq", "status", *pos_cols,
                                "earlier_max_offset"))

    acked_at = (r.where((F.col("status") == "acked") & F.col("offset").isNotNull()
                        & F.col("partition").isNotNull())
                .select("record_id", "producer", "seq", "topic", "partition", "offset",
                        "send_ts_us", "ack_ts_us"))
    h1, h2 = F.xxhash64("record_id"), F.xxhash64(F.lit("harness"), "record_id")
    other_seen = ((F.col("has_foreign") == 1) | (F.col("h1_min") != h1) | (F.col("h1_max") != h1)
                  | (F.col("h2_min") != h2) | (F.col("h2_max") != h2))
    overwritten = acked_at.join(v.offsets, ["topic", "partition", "offset"]).where(other_seen)
    others = consumed.select("topic", "partition", "offset",
                             F.col("record_id").alias("consumed_record_id"),
                             F.col("consumer").alias("consumed_by"))
    out["overwritten"] = (overwritten.select(*acked_at.columns)
                          .join(others, ["topic", "partition", "offset"])
                          .where(F.col("consumed_record_id").isNull()
                                 | (F.col("consumed_record_id") != F.col("record_id"))))

    divergent_at = v.offsets.where(
        (F.col("h1_min") != F.col("h1_max")) | (F.col("h2_min") != F.col("h2_max"))
        | ((F.col("has_foreign") == 1) & F.col("h1_min").isNotNull())
    ).select("topic", "partition", "offset")
    out["divergent"] = consumed.join(divergent_at, ["topic", "partition", "offset"]).select(
        "topic", "partition", "offset", "record_id", "consumer", "group_id", "phase",
        "isolation", "recv_ts_us")

    out["redelivered"] = v.groups.where(F.col("deliveries") > 1).select(
        "group_id", "topic", "partition", "offset", "deliveries",
        (F.col("deliveries") - 1).alias("extra_deliveries"))

    out["skipped"] = skipped_frame(v, consumed, commits)
    return out


def skipped_frame(v: Views, consumed: DataFrame, commits: DataFrame) -> DataFrame:
    high = (commits.where(F.col("ok") & F.col("group_id").isNotNull()
                          & (F.col("consumer") != "drain"))
            .groupBy("group_id", "topic", "partition")
            .agg(F.max("offset").alias("committed_offset")))
    group_rc = (consumed.where((F.col("phase") == "run") & F.col("group_id").isNotNull())
                .groupBy("group_id")
                .agg(F.max((F.col("isolation") == "read_committed").cast("int"))
                     .alias("group_read_committed")))
    drain_at = v.offsets.where(F.col("drain_seen") == 1).select("topic", "partition", "offset")
    below = (drain_at.join(F.broadcast(high), ["topic", "partition"])
             .where(F.col("offset") < F.col("committed_offset")))
    missed = below.join(v.groups, ["group_id", "topic", "partition", "offset"], "left_anti")
    # the record the drain saw there (lowest record_id if it saw several)
    drained = consumed.where((F.col("phase") == "drain") & F.col("record_id").isNotNull()).select(
        "topic", "partition", "offset", F.col("record_id").alias("drain_record_id"))
    missed = (missed.join(drained, ["topic", "partition", "offset"], "left")
              .groupBy("group_id", "topic", "partition", "offset", "committed_offset")
              .agg(F.min("drain_record_id").alias("drain_record_id")))
    aborted = v.records.where(F.col("txn_outcome") == "aborted").select(
        F.col("record_id").alias("drain_record_id"), F.lit(1).alias("drain_record_aborted"))
    return (missed.join(aborted, "drain_record_id", "left")
            .join(F.broadcast(group_rc), "group_id", "left")
            .where(~(F.coalesce(F.col("drain_record_aborted"), F.lit(0)) == 1)
                   | ~(F.coalesce(F.col("group_read_committed"), F.lit(0)) == 1))
            .select("group_id", "topic", "partition", "offset", "committed_offset",
                    "drain_record_id"))


@dataclass
class AnomalyResult:
    counts: dict[str, int]
    samples: dict[str, list[dict]]
    columns: dict[str, list[str]]


def write_anomalies(spark, frames: dict[str, DataFrame], loc: RunLocation,
                    step=lambda name: None) -> AnomalyResult:
    """Write every kind's rows under report/anomalies/<kind>/ and count them from the files."""
    counts: dict[str, int] = {}
    samples: dict[str, list[dict]] = {}
    columns: dict[str, list[str]] = {}
    for kind in KINDS:
        path = loc.spark_path("report", "anomalies", kind)
        frames[kind].write.mode("overwrite").parquet(path)
        written = spark.read.parquet(path)
        how, keys = COUNT_BY[kind]
        # Most kinds are empty or small: when fewer than SAMPLE_ROWS + 1 rows were
        # written, the sample *is* every row, so count it here instead of in a job.
        head = [r.asDict(recursive=True) for r in written.limit(SAMPLE_ROWS + 1).collect()]
        if len(head) <= SAMPLE_ROWS:
            n = (sum(r[keys[0]] or 0 for r in head) if how == "sum"
                 else len({tuple(r[k] for k in keys) for r in head}))
        elif how == "sum":
            n = written.agg(F.sum(keys[0])).collect()[0][0] or 0
        else:
            n = written.select(*keys).distinct().count()
        counts[kind] = int(n)
        columns[kind] = written.columns
        samples[kind] = head[:SAMPLE_ROWS] if n else []
        step(f"anomalies.{kind}")
    return AnomalyResult(counts, samples, columns)


COUNT_NAMES = ("sent", "acked", "failed", "indeterminate", "consumed", "consumed_run",
               "consumed_drain", "consumed_foreign", "commits", "commits_ok")


def count_aggregations() -> dict[str, list]:
    """The history's counts as aggregations per table (computed in validation's scan)."""
    status, phase = F.col("status"), F.col("phase")
    n = lambda cond: F.sum(cond.cast("long"))  # noqa: E731
    return {
        "produced": [F.count(F.lit(1)).alias("sent"), n(status == "acked").alias("acked"),
                     n(status == "failed").alias("failed"),
                     n(status == "indeterminate").alias("indeterminate"),
                     F.first("run_id", ignorenulls=True).alias("run_id")],
        "consumed": [F.count(F.lit(1)).alias("consumed"), n(phase == "run").alias("consumed_run"),
                     n(phase == "drain").alias("consumed_drain"),
                     n(F.col("record_id").isNull()).alias("consumed_foreign")],
        "commits": [F.count(F.lit(1)).alias("commits"), n(F.col("ok")).alias("commits_ok")],
    }


def counts_from(results: dict[str, dict]) -> dict:
    """The counts out of check_values' results (an empty table counts 0)."""
    merged = {k: v for table in ("produced", "consumed", "commits")
              for k, v in results.get(table, {}).items()}
    return {name: int(merged.get(name) or 0) for name in COUNT_NAMES}


def history_counts(produced: DataFrame, consumed: DataFrame, commits: DataFrame) -> dict:
    aggs = count_aggregations()
    results = {t: df.agg(*aggs[t]).collect()[0].asDict()
               for t, df in (("produced", produced), ("consumed", consumed), ("commits", commits))}
    return counts_from(results)
