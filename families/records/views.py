"""The records family's views, which every anomaly rule reads (the transactions
family's too): the spec's counting rules, in Spark.

One flow for every history. Four intermediate views carry the rules; each is
computed once and written as Parquet under report/_views/ (removed at the
end; spark_reports/scratch.py), then read back: measured at 10 M records, writing the per-record view
took 23 s where persisting it in Spark's cache (MEMORY_AND_DISK) took 99 s.

- `records`  one row per record_id, produced ⟗ consumed: status, transaction,
             the record's *position* and how it was consumed.
- `offsets`  one row per consumed (topic, partition, offset): which
             record_ids were seen there (as hashes), whether the drain saw it.
- `groups`   one row per (group, topic, partition, offset) delivered in `run`,
             and one per offset drained below the group's highest accepted
             commit that the group was not delivered (deliveries 0).
- `poll`     the judged `run` deliveries (poll_seq and assignment known) that went
             back or jumped, with the highest offset received before them.

Each anomaly kind is one function of its family's checker (families/*/checker.py),
named after its row in the spec. The big aggregations use fixed-width buffers (longs,
64-bit hashes), which Spark runs as hash aggregations, except the per-record
position minimum (a struct; see _per_record).

Readings of the spec chosen here:
- position: the drain's (topic, partition, offset) for the record, else the
  first position any consumer saw it at; "first" = smallest recv_ts_us, ties
  broken by (topic, partition, offset).
- divergent: a null record_id (a payload the harness did not write) counts as
  a value of its own; distinctness is decided on two independent 64-bit hashes
  of the record_id (a false "same" needs both to collide, ~2^-128 per pair).
- overwritten: likewise a null record_id at the acked offset is "another record".
- unexpected ignores rows whose record_id is null (no record_id to count);
  they are counted as `consumed_foreign` instead.
- skipped: commits with ok = true, a non-null group_id and consumer != 'drain'.
- redelivered: only rows with a non-null group_id ("to one group").
"""
from __future__ import annotations

from dataclasses import dataclass

from pyspark.sql import DataFrame, Window
from pyspark.sql import functions as F

PRODUCED_COLS = ("record_id", "producer", "seq", "key", "topic", "partition", "offset",
                 "status", "error", "send_ts_us", "ack_ts_us", "txn_id", "txn_seq", "txn_outcome",
                 "acked_by")
OFFSET = ("topic", "partition", "offset")
POLL_KEY = ("consumer", "assignment", "topic", "partition")
POLL_COLUMNS = (*POLL_KEY, "offset", "poll_seq", "group_id", "isolation", "record_id",
                "recv_ts_us")


@dataclass
class Views:
    records: DataFrame
    offsets: DataFrame
    groups: DataFrame
    poll: DataFrame
    # Row counts observed while the views were written (no extra job): records
    # consumed at two positions, acked records not found at their own offset,
    # divergent offsets, drained offsets a group committed past without receiving
    # them, deliveries that went back, offsets jumped over; plus the run's first
    # send and last send-or-ack.
    sizes: dict


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


def count_if(cond) -> F.Column:
    return F.coalesce(F.sum(cond.cast("long")), F.lit(0))


def _positions(consumed: DataFrame) -> DataFrame:
    """One row per (record_id, position) consumed. Only narrow columns are shuffled
    (by record_id, once): phase and isolation as flags; the per-record aggregation
    and the join with produced then all run on that one partitioning."""
    c = (consumed.where(F.col("record_id").isNotNull())
         .select("record_id", *OFFSET, "recv_ts_us",
                 (F.col("phase") == "drain").alias("is_drain"),
                 (F.col("phase") == "run").alias("is_run"),
                 (F.col("isolation") == "read_committed").cast("int").alias("rc"),
                 ((F.col("phase") == "run") & (F.col("isolation") != "read_committed"))
                 .cast("int").alias("ru_run"))
         .repartition("record_id"))
    return c.groupBy("record_id", *OFFSET).agg(
        F.max("ru_run").alias("read_uncommitted_run"),
        F.min(F.when(F.col("is_drain"), F.col("recv_ts_us"))).alias("drain_first_us"),
        F.min("recv_ts_us").alias("first_us"),
        F.min(F.when(F.col("is_run"), F.col("recv_ts_us"))).alias("first_run_us"),
        F.max("rc").alias("read_committed"),
        F.count(F.lit(1)).alias("deliveries"))


def _per_record(positions: DataFrame) -> DataFrame:
    """Per record: its position = the minimum of (rank, topic, partition, offset),
    rank = not_drain << 52 | seen_us (so a drain copy wins, then the first seen)."""
    rank = ((F.col("drain_first_us").isNull().cast("long") * (1 << 52))
            + F.coalesce("drain_first_us", "first_us"))
    pos = F.struct(rank.alias("rank"), *[F.col(c).alias(c) for c in OFFSET])
    return positions.groupBy("record_id").agg(
        F.count(F.lit(1)).alias("n_positions"),
        F.max("read_committed").alias("read_committed_seen"),
        F.max("read_uncommitted_run").alias("read_uncommitted_seen"),
        F.min("first_run_us").alias("first_run_recv_us"),
        F.sum("deliveries").alias("deliveries"),
        F.min(pos).alias("pos")).select(
        "record_id", "n_positions", "read_committed_seen", "read_uncommitted_seen",
        "first_run_recv_us", "deliveries",
        F.col("pos.topic").alias("pos_topic"), F.col("pos.partition").alias("pos_partition"),
        F.col("pos.offset").alias("pos_offset"),
        (F.col("pos.rank") < (1 << 52)).alias("pos_from_drain"))


# Counts the summary carries beside the anomalies (observed while the records view is
# written; see build_views).
SIDE_COUNTS = ("aborted_seen_uncommitted", "acked_truncated")


def build_views(produced: DataFrame, consumed: DataFrame, commits: DataFrame,
                materialize, beside) -> Views:
    """materialize(name, df, observe) -> (df, observed): writes a view, reads it back.
    beside(fn) -> a callable returning fn()'s value: runs fn in a thread of its own.
    The offsets and groups views do not read the records view, so they are built
    while it is (a fresh JVM leaves a core idle at times: planning and generating
    code run on one thread)."""
    offset_views = beside(lambda: _offset_views(consumed, commits, materialize))
    records, sizes = _records_view(produced, consumed, materialize)
    poll, polled = materialize("poll", *_poll(consumed))
    (offsets, seen), (groups, missed) = offset_views()
    return Views(records, offsets, groups, poll, {**sizes, **polled, **seen, **missed})


def _offset_views(consumed: DataFrame, commits: DataFrame, materialize) -> tuple:
    offsets, seen = materialize("offsets", _offsets(consumed),
                                {"divergent_offsets": count_if(DIVERGENT())})
    groups, missed = materialize("groups", _groups(consumed, commits, offsets),
                                 {"missed": count_if(MISSED()),
                                  "redelivered": count_if(F.col("deliveries") > 1)})
    return (offsets, seen), (groups, missed)


def _records_view(produced: DataFrame, consumed: DataFrame, materialize) -> tuple:
    # a compacted topic's write (it has a tombstone flag): its cleaner removes older
    # values by design, so it is judged by the compacted family's kinds, not by `lost`
    p = produced.select(*PRODUCED_COLS, F.col("txn_id").isNotNull().alias("in_txn"),
                        F.col("tombstone").isNotNull().alias("compacted"))
    return materialize(
        "records", p.join(_per_record(_positions(consumed)), "record_id", "full_outer"),
        {"duplicate_ids": count_if(F.col("n_positions") >= 2),
         "moved_acked": count_if(ACKED_AT() & ~AT_OWN_OFFSET()),
         # the record-filter kinds' rows (anomalies.py), so an empty kind costs no job
         "lost": count_if(LOST()), "recovered": count_if(RECOVERED()),
         "unexpected": count_if(UNEXPECTED()), "aborted_read": count_if(ABORTED_READ()),
         # a torn transaction has an aborted record read committed or a committed one
         # never consumed (torn_transaction's rows are looked for only then)
         "unseen_committed": count_if((F.col("txn_outcome") == "committed") & ~CONSUMED()),
         # not anomalies, counted beside them: what read_uncommitted costs (claim 7);
         # acknowledged records read during the run and gone from the final log (an
         # unclean election truncated them and nothing was written over them, so
         # neither lost nor overwritten says so: claim 4)
         "aborted_seen_uncommitted": count_if((F.col("read_uncommitted_seen") == 1)
                                              & (F.col("txn_outcome") == "aborted")),
         "acked_truncated": count_if((F.col("status") == "acked") & CONSUMED()
                                     & ~F.col("pos_from_drain")),
         "run_start_us": F.min("send_ts_us"),
         "run_end_us": F.max(F.greatest("send_ts_us", "ack_ts_us"))})


# Conditions shared by the views' observed sizes and the anomaly rules (functions:
# a Column needs a live SparkContext).
def CONSUMED():
    return F.col("n_positions").isNotNull()


def LOST():  # noqa: N802 - the spec's lost: acked, never consumed (a compacted write: no)
    return (F.col("status") == "acked") & ~CONSUMED() & ~F.col("compacted")


def RECOVERED():  # noqa: N802 - the spec's recovered: indeterminate, consumed
    return (F.col("status") == "indeterminate") & CONSUMED()


def UNEXPECTED():  # noqa: N802 - consumed, never sent or failed outside a transaction
    return CONSUMED() & (F.col("producer").isNull()
                         | ((F.col("status") == "failed") & ~F.col("in_txn")))


def ABORTED_READ():  # noqa: N802 - a read_committed consumer saw an aborted record
    return (F.col("read_committed_seen") == 1) & (F.col("txn_outcome") == "aborted")


def ACKED_AT():
    return ((F.col("status") == "acked") & F.col("offset").isNotNull()
            & F.col("partition").isNotNull())


def AT_OWN_OFFSET():
    return (F.col("pos_topic").eqNullSafe(F.col("topic"))
            & F.col("pos_partition").eqNullSafe(F.col("partition"))
            & F.col("pos_offset").eqNullSafe(F.col("offset")))


def DIVERGENT():
    return ((F.col("h1_min") != F.col("h1_max")) | (F.col("h2_min") != F.col("h2_max"))
            | ((F.col("has_foreign") == 1) & F.col("h1_min").isNotNull()))


def MISSED():
    return F.col("committed_offset").isNotNull() & (F.col("deliveries") == 0)


def _h(salt: str | None) -> F.Column:
    args = ([F.lit(salt)] if salt else []) + [F.col("record_id")]
    return F.when(F.col("record_id").isNotNull(), F.xxhash64(*args))


def _group_h(group_id) -> F.Column:
    return F.xxhash64(F.lit("group"), group_id)


def _offsets(consumed: DataFrame) -> DataFrame:
    """Per consumed offset: the record_ids seen there (min/max of two independent 64-bit
    hashes, fixed-width, so a hash aggregation), whether any payload there was
    foreign, whether the drain saw it, and the lowest and highest hash of the groups
    it was delivered to in `run` (_groups)."""
    run_group = (F.col("phase") == "run") & F.col("group_id").isNotNull()
    return (consumed.select(*OFFSET, _h(None).alias("h1"), _h("harness").alias("h2"),
                            F.col("record_id").isNull().cast("int").alias("foreign"),
                            (F.col("phase") == "drain").cast("int").alias("drain"),
                            F.when(run_group, _group_h(F.col("group_id"))).alias("gh"))
            .repartition(*OFFSET).groupBy(*OFFSET).agg(
                F.min("h1").alias("h1_min"), F.max("h1").alias("h1_max"),
                F.min("h2").alias("h2_min"), F.max("h2").alias("h2_max"),
                F.max("foreign").alias("has_foreign"), F.max("drain").alias("drain_seen"),
                F.min("gh").alias("run_group_h_min"), F.max("gh").alias("run_group_h_max")))


def _groups(consumed: DataFrame, commits: DataFrame, offsets: DataFrame) -> DataFrame:
    """Per (group, offset): deliveries in `run` and the first one's time (consumer
    lag), and for offsets the drain saw below the group's highest accepted commit,
    that commit. Both in one aggregation, so the "drained but never received" rows
    need no anti-join of two big tables.

    A drained offset below a group's commit joins that aggregation only when the
    offsets view cannot already tell that the group received it: its hash is
    neither the lowest nor the highest of the groups the offset was delivered to
    (so with one or two groups, a passing run adds no row; a false "received"
    needs two group names' 64-bit hashes to collide)."""
    high = highest_commits(commits).withColumn("gh", _group_h(F.col("group_id")))
    delivered = (consumed.where((F.col("phase") == "run") & F.col("group_id").isNotNull())
                 .select("group_id", *OFFSET, F.lit(1).alias("n"), "recv_ts_us",
                         F.lit(None).cast("long").alias("committed_offset")))
    received = ((F.col("gh") == F.col("run_group_h_min"))
                | (F.col("gh") == F.col("run_group_h_max")))
    below = (offsets.where(F.col("drain_seen") == 1)
             .select(*OFFSET, "run_group_h_min", "run_group_h_max")
             .join(F.broadcast(high), ["topic", "partition"])
             .where((F.col("offset") < F.col("committed_offset"))
                    & ~F.coalesce(received, F.lit(False)))
             .select("group_id", *OFFSET, F.lit(0).alias("n"),
                     F.lit(None).cast("long").alias("recv_ts_us"), "committed_offset"))
    return (delivered.unionByName(below).repartition(*OFFSET).groupBy("group_id", *OFFSET)
            .agg(F.sum("n").alias("deliveries"), F.min("recv_ts_us").alias("first_recv_us"),
                 F.max("committed_offset").alias("committed_offset")))


def _poll(consumed: DataFrame) -> tuple[DataFrame, dict]:
    """The judged `run` deliveries that went back or jumped, with the highest offset
    the consumer had received from that partition earlier in that generation
    (earlier_max_offset); a delivery right after the previous highest says nothing
    and is not kept. Sorted once, by (consumer, assignment, partition, poll_seq).
    With what to observe: deliveries that went back, offsets jumped over."""
    judged = consumed.where((F.col("phase") == "run") & F.col("poll_seq").isNotNull()
                            & F.col("assignment").isNotNull())
    earlier = (Window.partitionBy(*POLL_KEY).orderBy("poll_seq", "offset")
               .rowsBetween(Window.unboundedPreceding, -1))
    # Only what the poll kinds read goes through the window's shuffle and sort (a real
    # run's every `run` delivery): not run_id, phase or key.
    rows = judged.select(*POLL_COLUMNS, F.max("offset").over(earlier).alias("earlier_max_offset"))
    went_back = F.col("offset") <= F.col("earlier_max_offset")
    jumped = F.col("offset") > F.col("earlier_max_offset") + 1
    return rows.where(went_back | jumped), {
        "went_back": count_if(went_back),
        "jumped_offsets": F.coalesce(F.sum(F.when(
            jumped, F.col("offset") - F.col("earlier_max_offset") - 1)), F.lit(0))}


def highest_commits(commits: DataFrame) -> DataFrame:
    """Per (group, topic, partition): the highest accepted commit."""
    return (commits.where(F.col("ok") & F.col("group_id").isNotNull()
                          & (F.col("consumer") != "drain"))
            .groupBy("group_id", "topic", "partition")
            .agg(F.max("offset").alias("committed_offset")))


def repeated_records(produced: DataFrame) -> int:
    """Produced rows that repeat another row's (producer, seq), i.e. its record_id
    `<producer>-<seq>` (the spec: unique in the run), in one small aggregation: seqs
    in blocks of 64, one bit each, so a block's rows outnumber its bits only where a
    seq repeats."""
    seq = F.col("seq")
    per_block = produced.groupBy("producer", F.shiftright(seq, 6).alias("block")).agg(
        F.count(F.lit(1)).alias("n"),
        F.bit_or(F.expr("shiftleft(1L, cast(seq & 63 as int))")).alias("m"))
    row = per_block.agg(F.sum(F.col("n") - F.bit_count("m")).alias("repeated")).collect()[0]
    return int(row["repeated"] or 0)
