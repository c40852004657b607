"""Every anomaly kind's offending rows, from the views (spark_reports/reconcile.py).

Lost, recovered, unexpected, aborted_read, reordered and redelivered are
filters of one view. The others need rows of the consumed table (every
delivery of a duplicate, every delivery at a divergent offset, what was read
at an overwritten record's offset, what the drain saw where a group skipped):
those rows are found in **one** scan of consumed, against small key sets
whose sizes were observed when the views were written, and kept as the
`watched` view. A kind whose key set is empty (the usual case in a passing
run) costs no job at all. Each kind's rows are written to
report/anomalies/<kind>/ (by the driver when few, by Spark otherwise) and the
count is taken from what was written, so summary.json and the Parquet cannot
disagree.

Rows written per kind (count rule in COUNT_BY): lost, recovered, unexpected,
aborted_read, reordered: one row per record; overwritten: one row per
(record, other delivery at its offset); duplicate and divergent: every
delivery involved; skipped and redelivered: one row per (group, position).
"""
from __future__ import annotations

from dataclasses import dataclass
from functools import reduce

from pyspark.sql import DataFrame, Window
from pyspark.sql import functions as F

from spark_reports.reconcile import (ABORTED_READ, ACKED_AT, AT_OWN_OFFSET, CONSUMED, DIVERGENT,
                                     LOST, MISSED, OFFSET, PRODUCED_COLS, RECOVERED, UNEXPECTED,
                                     Views, small)
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
REORDERED_COLS = ("record_id", "producer", "seq", "status", "pos_topic", "pos_partition",
                  "pos_offset", "pos_from_drain", "earlier_max_offset")
OW_COLS = ("record_id", "producer", "seq", *OFFSET, "send_ts_us", "ack_ts_us")


def anomaly_frames(v: Views, consumed: DataFrame, materialize,
                   read_committed_groups: set[str]) -> dict[str, DataFrame]:
    """Every offending row per kind (not yet computed: write_anomalies writes them).
    materialize(name, df, observe) -> (df, observed), as for the views.
    read_committed_groups: the groups with a read_committed `run` row
    (validate.HistoryValues)."""
    r, n = v.records, v.sizes
    produced_cols = list(PRODUCED_COLS)
    pos_cols = ["pos_topic", "pos_partition", "pos_offset", "pos_from_drain"]
    out: dict[str, DataFrame] = {}
    # the kinds that show whole produced rows (FLAGGED), from their own small table if
    # the path made one
    f = v.ready.get("flagged", r)

    out["lost"] = f.where(LOST()).select(*produced_cols)

    out["recovered"] = f.where(RECOVERED()).select(*produced_cols, *pos_cols, "deliveries")

    out["unexpected"] = f.where(UNEXPECTED()).select(
        F.when(F.col("producer").isNull(), F.lit("never sent"))
        .otherwise(F.lit("failed outside a transaction")).alias("reason"),
        *produced_cols, *pos_cols, "deliveries")

    out["aborted_read"] = f.where(ABORTED_READ()).select(*produced_cols, *pos_cols)

    if "reordered" in v.ready:
        out["reordered"] = v.ready["reordered"]
    else:
        earlier = (Window.partitionBy("producer", "pos_topic", "pos_partition").orderBy("seq")
                   .rowsBetween(Window.unboundedPreceding, -1))
        out["reordered"] = (r.where(F.col("producer").isNotNull() & CONSUMED())
                            .select(*REORDERED_COLS[:-1])
                            .withColumn("earlier_max_offset", F.max("pos_offset").over(earlier))
                            .where(F.col("pos_offset") < F.col("earlier_max_offset")))

    out["redelivered"] = v.groups.where(F.col("deliveries") > 1).select(
        "group_id", *OFFSET, "deliveries", (F.col("deliveries") - 1).alias("extra_deliveries"))

    # The small key sets, and the one scan of consumed that serves them all.
    dup = v.ready.get("duplicates", r.where(F.col("n_positions") >= 2)).select(
        "record_id", "producer", "seq", "status", "n_positions")
    divergent_at = v.offsets.where(DIVERGENT()).select(*OFFSET)
    # a path may know the drain's record at a missed offset already (drain_record_id)
    missed = v.groups.where(MISSED()).select(
        "group_id", *OFFSET, "committed_offset",
        *(["drain_record_id"] if "drain_record_id" in v.groups.columns else []))
    if v.keyed is not None:
        watched, candidates, n_candidates = (v.keyed.watched, v.keyed.candidates,
                                             v.keyed.n_candidates)
    else:
        candidates, n_candidates = overwrite_candidates(r, n, divergent_at, materialize)
        offset_sets = [(df.select(*OFFSET), rows) for df, rows in (
            (divergent_at, n["divergent_offsets"]), (candidates, n_candidates),
            (missed, n["missed"])) if rows]
        watched = watched_rows(consumed, offset_sets,
                               (dup.select("record_id"), n["duplicate_ids"]), materialize)

    out["duplicate"] = _unless_none(n["duplicate_ids"], watched.join(
        small(dup, n["duplicate_ids"]), "record_id").select(
        "record_id", "producer", "seq", "status", "n_positions", *OFFSET, "consumer",
        "group_id", "phase", "recv_ts_us"))

    out["divergent"] = _unless_none(n["divergent_offsets"], watched.join(
        small(divergent_at, n["divergent_offsets"]), list(OFFSET)).select(
        *OFFSET, "record_id", "consumer", "group_id", "phase", "isolation", "recv_ts_us"))

    out["overwritten"] = _unless_none(n_candidates, (
        watched.select(*OFFSET, F.col("record_id").alias("consumed_record_id"),
                       F.col("consumer").alias("consumed_by"))
        .join(small(candidates, n_candidates), list(OFFSET))
        .where(F.col("consumed_record_id").isNull()
               | (F.col("consumed_record_id") != F.col("record_id")))
        .select(*OW_COLS, "consumed_record_id", "consumed_by")))

    out["skipped"] = _skipped(v, missed, watched, consumed, read_committed_groups)
    return out


def _unless_none(rows: int, df: DataFrame) -> DataFrame:
    """df, or (when its key set is known to be empty) the same columns and no rows,
    planned as an empty relation: no scan."""
    return df if rows else df.limit(0)


def overwrite_candidates(records: DataFrame, n: dict, divergent_at: DataFrame, materialize
                         ) -> tuple[DataFrame, int]:
    """Acked records that may have been overwritten, and how many.

    An acked record consumed at its acked offset, where no other record_id and no
    foreign payload was seen, is not overwritten. So only two kinds of acked record
    are checked against the consumed rows at their offset: those whose position is
    elsewhere or unknown (lost, moved, duplicated), and those acked at a divergent
    offset (a record whose position is not known yet counts as elsewhere)."""
    if not (n["moved_acked"] or n["divergent_offsets"]):
        return records.select(*OW_COLS).limit(0), 0
    acked_at, elsewhere = records.where(ACKED_AT()), ~AT_OWN_OFFSET()
    if n["divergent_offsets"]:
        acked_at = acked_at.join(small(divergent_at.withColumn("_div", F.lit(True)),
                                       n["divergent_offsets"]), list(OFFSET), "left")
        elsewhere = elsewhere | F.col("_div").isNotNull()
    candidates = acked_at.where(elsewhere).select(*OW_COLS)
    df, seen = materialize("overwrite_candidates", candidates, {"rows": F.count(F.lit(1))})
    return df, int(seen["rows"])


def rows_matching(rows: DataFrame, offset_sets: list[tuple[DataFrame, int]],
                  ids: tuple[DataFrame, int]) -> DataFrame:
    """The rows at any of the offsets in `offset_sets` or of any record_id in `ids`
    (each row once): one scan, each key set broadcast when small."""
    c, hit = rows, []
    if offset_sets:
        offsets = reduce(DataFrame.unionByName, [df for df, _ in offset_sets]).distinct()
        c = c.join(small(offsets.withColumn("_at", F.lit(True)),
                         sum(n for _, n in offset_sets)), list(OFFSET), "left")
        hit.append(F.col("_at").isNotNull())
    if ids[1]:
        c = c.join(small(ids[0].distinct().withColumn("_of", F.lit(True)), ids[1]), "record_id",
                   "left")
        hit.append(F.col("_of").isNotNull())
    if not hit:
        return rows.limit(0)
    return c.where(reduce(lambda a, b: a | b, hit)).select(*rows.columns)


def watched_rows(consumed: DataFrame, offset_sets: list[tuple[DataFrame, int]],
                 ids: tuple[DataFrame, int], materialize) -> DataFrame:
    """The consumed rows the keyed rules read (rows_matching), written once."""
    return materialize("watched", rows_matching(consumed, offset_sets, ids), None)[0]


def _skipped(v: Views, missed: DataFrame, watched: DataFrame, consumed: DataFrame,
             read_committed_groups: set[str]) -> DataFrame:
    """Drained offsets the group committed past without receiving them, unless the
    drain's record there (the lowest record_id if it saw several) is of an aborted
    transaction and the group reads committed."""
    cols = ["group_id", *OFFSET, "committed_offset", "drain_record_id"]
    if not v.sizes["missed"]:
        return missed.withColumn("drain_record_id", F.lit(None).cast("string")).select(
            *cols).limit(0)
    if "drain_record_id" not in missed.columns:
        missed = missed.withColumn("drain_record_id", F.lit(None).cast("string"))
    drained = (watched.where((F.col("phase") == "drain") & F.col("record_id").isNotNull())
               .groupBy(*OFFSET).agg(F.min("record_id").alias("_drained")))
    missed = missed.join(drained, list(OFFSET), "left").withColumn(
        "drain_record_id", F.coalesce("drain_record_id", "_drained")).drop("_drained")
    # the drain's record at a missed offset was drained: a path's "aborted" view (the
    # drained records of aborted transactions) has it, if it was aborted
    aborted = (v.ready.get("aborted", v.records).where(F.col("txn_outcome") == "aborted")
               .select(F.col("record_id").alias("drain_record_id"))
               .join(small(missed.select("drain_record_id").where(
                   F.col("drain_record_id").isNotNull()).distinct(), v.sizes["missed"]),
                   "drain_record_id")
               .select("drain_record_id", F.lit(1).alias("drain_record_aborted")))
    group_rc = consumed.sparkSession.createDataFrame(
        [(g, 1) for g in sorted(read_committed_groups)],
        "group_id string, group_read_committed int")
    return (missed.join(aborted, "drain_record_id", "left")
            .join(F.broadcast(group_rc), "group_id", "left")
            .where(~(F.coalesce(F.col("drain_record_aborted"), F.lit(0)) == 1)
                   | ~(F.coalesce(F.col("group_read_committed"), F.lit(0)) == 1))
            .select(*cols))


@dataclass
class AnomalyResult:
    counts: dict[str, int]
    samples: dict[str, list[dict]]
    columns: dict[str, list[str]]


# A kind with at most this many rows is fetched to the driver once (Arrow) and
# written there: one job instead of Spark's write, read-back and sample jobs
# (measured: benchmarks/RESULTS.md). A kind with more rows is written by Spark.
DRIVER_WRITE_MAX_ROWS = 100_000


def write_anomalies(spark, frames: dict[str, DataFrame], loc: RunLocation,
                    step=lambda name: None) -> AnomalyResult:
    """Write every kind's rows under report/anomalies/<kind>/ and count them from what
    was written."""
    counts: dict[str, int] = {}
    samples: dict[str, list[dict]] = {}
    columns: dict[str, list[str]] = {}
    for kind in KINDS:
        how, keys = COUNT_BY[kind]
        rows = frames[kind].limit(DRIVER_WRITE_MAX_ROWS + 1).toArrow()
        if rows.num_rows <= DRIVER_WRITE_MAX_ROWS:
            rows = _write_from_driver(rows, loc, kind)
            n = (sum(v or 0 for v in rows.column(keys[0]).to_pylist()) if how == "sum"
                 else len(set(zip(*(rows.column(k).to_pylist() for k in keys)))))
            head = rows.slice(0, SAMPLE_ROWS).to_pylist()
            names = rows.column_names
        else:
            n, head, names = _write_with_spark(spark, frames[kind], loc, kind)
        counts[kind] = int(n)
        columns[kind] = names
        samples[kind] = head if n else []
        step(f"anomalies.{kind}")
    return AnomalyResult(counts, samples, columns)


def _write_from_driver(rows, loc: RunLocation, kind: str):
    """rows (an Arrow table) as report/anomalies/<kind>/part-00000.parquet, with the
    _SUCCESS marker Spark's writer leaves; strings as Spark writes them (not large)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    schema = pa.schema([f.with_type(pa.string()) if pa.types.is_large_string(f.type) else f
                        for f in rows.schema])
    rows = rows.cast(schema)
    d = loc.path("report", "anomalies", kind)
    if loc.exists("report", "anomalies", kind):
        loc.fs.delete_dir(d)
    loc.fs.create_dir(d, recursive=True)
    pq.write_table(rows, f"{d}/part-00000.parquet", filesystem=loc.fs)
    loc.write_bytes(b"", "report", "anomalies", kind, "_SUCCESS")
    return rows


def _write_with_spark(spark, df: DataFrame, loc: RunLocation, kind: str):
    """(count, sample rows, columns) of a kind too big for the driver, written by Spark
    and counted from the files."""
    path = loc.spark_path("report", "anomalies", kind)
    df.write.mode("overwrite").parquet(path)
    written = spark.read.parquet(path)
    how, keys = COUNT_BY[kind]
    if how == "sum":
        n = written.agg(F.sum(keys[0])).collect()[0][0] or 0
    else:
        n = written.select(*keys).distinct().count()
    head = [r.asDict(recursive=True) for r in written.limit(SAMPLE_ROWS).collect()]
    return n, head, written.columns
