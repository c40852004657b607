"""The anomaly computation: the spec's counting rules, literally, in Spark.

Three intermediate views carry every rule. Each is computed once and written
as Parquet under report/_views/ (removed at the end), then read back: measured
at 10 M records, writing the per-record view took 23 s where persisting it in
Spark's cache (MEMORY_AND_DISK, which spills) took 99 s.

- `records`  one row per record_id, produced ⟗ consumed: status, transaction,
             the record's *position* and how it was consumed.
- `offsets`  one row per consumed (topic, partition, offset): which
             record_ids were seen there (as hashes), whether the drain saw it.
- `groups`   one row per (group, topic, partition, offset) delivered in `run`
             or drained below the group's highest accepted commit.

This is the general path. When the history's names fit small catalogs, the
position path (spark_reports/position_path.py) shuffles produced and consumed
once, by position, and runs this path only on the rows of the positions and
records where anything happened; both give the same anomaly rows.

The anomaly kinds are computed from these views in spark_reports/anomalies.py.
The aggregations over the big tables use fixed-width buffers (longs, 64-bit
hashes), which Spark runs as hash aggregations, except the per-record position
minimum (a struct; see below). Two rules that read like joins of two big
tables are not: overwritten checks only the acked records not found alone at
their own offset, and skipped folds drained offsets below a commit and run
deliveries into one aggregation (see _groups).

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
"""
from __future__ import annotations

from dataclasses import dataclass, field

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from spark_reports.storage import RunLocation



@dataclass
class Keyed:
    """Consumed rows the keyed anomaly rules read, when a path has fetched them
    already (spark_reports/position_path.py), and the overwrite candidates."""
    watched: DataFrame
    candidates: DataFrame
    n_candidates: int


@dataclass
class Views:
    records: DataFrame
    offsets: DataFrame
    groups: DataFrame
    # Row counts observed while the views were written (no extra job): how many
    # records were consumed at two positions, acked records not found at their own
    # offset, divergent offsets, and drained offsets a group committed past without
    # receiving them; plus the run's first send and last send-or-ack.
    sizes: dict
    keyed: Keyed | None = None
    # anomaly inputs a path computed its own way: "flagged" (the records of FLAGGED
    # kinds with every produced column), "duplicates" (records consumed at several
    # positions), "reordered" (that kind's rows), "aborted" (records of aborted
    # transactions, at least those the drain saw)
    ready: dict = field(default_factory=dict)


class Scratch:
    """Where the views are written: report/_views/<name>/, removed by `remove`."""

    def __init__(self, spark, loc: RunLocation):
        self.spark, self.loc = spark, loc

    def materialize(self, name: str, df: DataFrame, observe: dict | None = None,
                    keep: list[str] | None = None) -> tuple[DataFrame, dict]:
        """Write df (only the columns in `keep`, if given), read it back; `observe`
        (name -> aggregate Column over all of df's columns) is computed during the
        write itself."""
        from pyspark.sql import Observation

        path = self.loc.spark_path("report", "_views", name)
        obs = None
        if observe:
            obs = Observation(name)
            df = df.observe(obs, *[c.alias(k) for k, c in observe.items()])
        if keep is not None:
            df = df.select(*keep)
        # Scratch is read back once or twice and then removed: Parquet's dictionary
        # encoding (tried on every column, then dropped for near-unique ones) cost
        # 8 of 53 CPU-s writing the 10 M-row records view. LZ4 (raw, the Parquet
        # standard one) against the default Snappy: a full read of that view took
        # 4.4-5.3 CPU-s against 4.9-6.3, writes the same (benchmarks/RESULTS.md).
        (df.write.mode("overwrite").option("parquet.enable.dictionary", "false")
         .option("compression", "lz4_raw").parquet(path))
        return self.spark.read.parquet(path), (dict(obs.get) if obs else {})

    def remove(self) -> None:
        if self.loc.exists("report", "_views"):
            self.loc.fs.delete_dir(self.loc.path("report", "_views"))


# Every big aggregation here is preceded by an explicit repartition on (a subset of)
# its keys. Its keys are nearly unique, so Spark's map-side partial aggregation
# would only cost: measured at 10 M records, grouping 20 M consumed rows by offset
# took 30 s, repartitioning first and then grouping 16.5 s.

# A small side of a join is broadcast (the big side is then scanned, not shuffled).
# The planner cannot know a filtered view is small; its size was observed when the
# view was written.
BROADCAST_MAX_ROWS = 1_000_000


def small(df: DataFrame, rows: int | None) -> DataFrame:
    return F.broadcast(df) if rows is not None and rows <= BROADCAST_MAX_ROWS else df


def _n(cond) -> "F.Column":
    return F.coalesce(F.sum(cond.cast("long")), F.lit(0))


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


def _topic_names(topics: list[str]) -> "F.Column":
    return F.array(*[F.lit(t) for t in topics])


def pack_position(topics: list[str], null_as_max: bool = False,
                  cols: tuple = ("topic", "partition", "offset")) -> "F.Column":
    """(topic, partition, offset) in one long (`cols`: their column names, or Columns).
    With null_as_max a null partition or offset becomes the top value of its field (a
    catalog never admits it as real). A topic outside `topics` gives a negative key."""
    topic, part, off = [F.col(c) if isinstance(c, str) else c for c in cols]
    part = part.cast("long")
    if null_as_max:
        part, off = F.coalesce(part, F.lit(MAX_PARTITION)), F.coalesce(off, F.lit(MAX_OFFSET))
    topic_id = F.coalesce(F.array_position(_topic_names(topics), topic), F.lit(0)) - 1
    return topic_id * (1 << 56) + part * (1 << 40) + off


def unpack_position(pk: "F.Column", topics: list[str]) -> list:
    """[topic, partition, offset] of a packed position (top values read as null)."""
    part = F.shiftright(pk, 40).bitwiseAND(MAX_PARTITION).cast("int")
    off = pk.bitwiseAND(MAX_OFFSET)
    topic_idx = F.shiftright(pk, 56) + 1
    return [F.when(topic_idx > 0, F.element_at(_topic_names(topics), topic_idx.cast("int"))),
            F.when(part != MAX_PARTITION, part), F.when(off != MAX_OFFSET, off)]


def _positions(consumed: DataFrame, topics: list[str] | None) -> DataFrame:
    """One row per (record_id, position) consumed. Only narrow columns are shuffled
    (by record_id, once): the position packed into one long when it fits, phase and
    isolation as flags; the per-record aggregation and the join with produced then
    all run on that one partitioning."""
    pos = [F.col("topic"), F.col("partition"), F.col("offset")]
    if topics is not None:
        pos = [pack_position(topics).alias("packed")]
    c = (consumed.where(F.col("record_id").isNotNull())
         .select("record_id", *pos, "recv_ts_us",
                 (F.col("phase") == "drain").alias("is_drain"),
                 (F.col("phase") == "run").alias("is_run"),
                 (F.col("isolation") == "read_committed").cast("int").alias("rc"))
         .repartition("record_id"))
    keys = ["topic", "partition", "offset"] if topics is None else ["packed"]
    return c.groupBy("record_id", *keys).agg(
        F.min(F.when(F.col("is_drain"), F.col("recv_ts_us"))).alias("drain_first_us"),
        F.min("recv_ts_us").alias("first_us"),
        F.min(F.when(F.col("is_run"), F.col("recv_ts_us"))).alias("first_run_us"),
        F.max("rc").alias("read_committed"),
        F.count(F.lit(1)).alias("deliveries"))


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
    best = F.min(F.struct(rank.alias("rank"), F.col("packed").alias("packed"))).alias("best")
    topic, partition, offset = unpack_position(F.col("best.packed"), topics)
    return positions.groupBy("record_id").agg(*common, best).select(
        *keep, topic.alias("pos_topic"), partition.alias("pos_partition"),
        offset.alias("pos_offset"), (F.col("best.rank") < (1 << 52)).alias("pos_from_drain"))


def _h1():
    return F.when(F.col("record_id").isNotNull(), F.xxhash64("record_id"))


def _h2():
    return F.when(F.col("record_id").isNotNull(), F.xxhash64(F.lit("harness"), "record_id"))


def build_views(produced: DataFrame, consumed: DataFrame, commits: DataFrame,
                topics: list[str] | None, materialize) -> Views:
    """materialize(name, df, observe) -> (df, observed): writes a view, reads it back."""
    positions = _positions(consumed, topics)
    p = produced.select(*PRODUCED_COLS, F.col("txn_id").isNotNull().alias("in_txn"))
    records, sizes = materialize(
        "records", p.join(_per_record(positions, topics), "record_id", "full_outer"),
        {"duplicate_ids": _n(F.col("n_positions") >= 2),
         "moved_acked": _n(ACKED_AT() & ~AT_OWN_OFFSET()),
         "run_start_us": F.min("send_ts_us"),
         "run_end_us": F.max(F.greatest("send_ts_us", "ack_ts_us"))})
    offsets, seen = materialize("offsets", _offsets(consumed),
                                {"divergent_offsets": _n(DIVERGENT())})
    groups, missed = materialize("groups", _groups(consumed, commits, offsets),
                                 {"missed": _n(MISSED())})
    return Views(records, offsets, groups, {**sizes, **seen, **missed})


PRODUCED_COLS = ("record_id", "producer", "seq", "key", "topic", "partition", "offset",
                 "status", "error", "send_ts_us", "ack_ts_us", "txn_id", "txn_seq", "txn_outcome")
OFFSET = ("topic", "partition", "offset")


# Conditions shared by the views' observed sizes and the anomaly frames (functions:
# a Column needs a live SparkContext).
def CONSUMED():  # noqa: N802 - consumed anywhere, by anyone
    return F.col("n_positions").isNotNull()


def LOST():  # noqa: N802
    return (F.col("status") == "acked") & ~CONSUMED()


def RECOVERED():  # noqa: N802
    return (F.col("status") == "indeterminate") & CONSUMED()


def UNEXPECTED():  # noqa: N802 - never sent, or failed outside a transaction
    return CONSUMED() & (F.col("producer").isNull()
                         | ((F.col("status") == "failed") & ~F.col("in_txn")))


def ABORTED_READ():  # noqa: N802
    return (F.col("read_committed_seen") == 1) & (F.col("txn_outcome") == "aborted")


def FLAGGED():  # noqa: N802 - an anomaly row of these kinds shows the whole produced row
    return F.coalesce(LOST(), F.lit(False)) | F.coalesce(RECOVERED(), F.lit(False)) \
        | F.coalesce(UNEXPECTED(), F.lit(False)) | F.coalesce(ABORTED_READ(), F.lit(False))


def ACKED_AT():  # noqa: N802 - an acked record with a known offset
    return ((F.col("status") == "acked") & F.col("offset").isNotNull()
            & F.col("partition").isNotNull())


def AT_OWN_OFFSET():  # noqa: N802 - its position is exactly its acked offset
    return (F.col("pos_topic").eqNullSafe(F.col("topic"))
            & F.col("pos_partition").eqNullSafe(F.col("partition"))
            & F.col("pos_offset").eqNullSafe(F.col("offset")))


def DIVERGENT():  # noqa: N802 - more than one value seen (a foreign payload is one)
    return ((F.col("h1_min") != F.col("h1_max")) | (F.col("h2_min") != F.col("h2_max"))
            | ((F.col("has_foreign") == 1) & F.col("h1_min").isNotNull()))


def MISSED():  # noqa: N802 - drained below the group's highest commit, never received in run
    return F.col("committed_offset").isNotNull() & (F.col("deliveries") == 0)


def _offsets(consumed: DataFrame) -> DataFrame:
    """Per consumed offset: the record_ids seen there (min/max of two independent 64-bit
    hashes, fixed-width, so a hash aggregation: two different record_ids look the same
    only if both hashes collide, ~2^-128), whether any payload there was foreign, and
    whether the drain saw it."""
    return (consumed.select(*OFFSET, _h1().alias("h1"), _h2().alias("h2"),
                            F.col("record_id").isNull().cast("int").alias("foreign"),
                            (F.col("phase") == "drain").cast("int").alias("drain"))
            .repartition(*OFFSET).groupBy(*OFFSET).agg(
                F.min("h1").alias("h1_min"), F.max("h1").alias("h1_max"),
                F.min("h2").alias("h2_min"), F.max("h2").alias("h2_max"),
                F.max("foreign").alias("has_foreign"), F.max("drain").alias("drain_seen")))


def _groups(consumed: DataFrame, commits: DataFrame, offsets: DataFrame) -> DataFrame:
    """Per (group, offset): deliveries in `run`, and for offsets the drain saw below the
    group's highest accepted commit, that commit. Both in one aggregation, so the
    "drained but never received" rows need no anti-join of two big tables."""
    high = highest_commits(commits)
    delivered = (consumed.where((F.col("phase") == "run") & F.col("group_id").isNotNull())
                 .select("group_id", *OFFSET, F.lit(1).alias("n"),
                         F.lit(None).cast("long").alias("committed_offset")))
    below = (offsets.where(F.col("drain_seen") == 1).select(*OFFSET)
             .join(F.broadcast(high), ["topic", "partition"])
             .where(F.col("offset") < F.col("committed_offset"))
             .select("group_id", *OFFSET, F.lit(0).alias("n"), "committed_offset"))
    return (delivered.unionByName(below).repartition(*OFFSET).groupBy("group_id", *OFFSET)
            .agg(F.sum("n").alias("deliveries"), F.max("committed_offset").alias("committed_offset")))


def highest_commits(commits: DataFrame) -> DataFrame:
    """Per (group, topic, partition): the highest accepted commit (see skipped above)."""
    return (commits.where(F.col("ok") & F.col("group_id").isNotNull()
                          & (F.col("consumer") != "drain"))
            .groupBy("group_id", "topic", "partition")
            .agg(F.max("offset").alias("committed_offset")))
