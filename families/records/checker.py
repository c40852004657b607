"""The records family's checker: each of its anomaly kinds, one function each,
named after its row in the spec.

Each function returns the kind's offending rows (a DataFrame, not yet
computed); families/records/kinds.py lists every kind with its function, and
write_anomalies (spark_reports/anomaly_output.py) writes the rows to
report/anomalies/<kind>/ and counts them by the kind's counting rule, from what
was written, so summary.json and the Parquet cannot disagree.

Most kinds are filters of one view (families/records/views.py). The kinds that
need rows of the consumed table (every delivery of a duplicate, every delivery
at a divergent offset, what was read at an overwritten record's offset, what
the drain saw where a group skipped or a consumer jumped) share **one** scan of
consumed against small key sets whose sizes were observed when the views were
written (Inputs.watched). A kind whose key set is empty (the usual case in a
passing run) costs no job at all.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from functools import reduce

from pyspark.sql import DataFrame, Window
from pyspark.sql import functions as F

from families.records.views import (
    ACKED_AT,
    AT_OWN_OFFSET,
    CONSUMED,
    DIVERGENT,
    LOST,
    MISSED,
    OFFSET,
    POLL_KEY,
    PRODUCED_COLS,
    RECOVERED,
    UNEXPECTED,
    Views,
    small,
)

POS_COLS = ("pos_topic", "pos_partition", "pos_offset", "pos_from_drain")


@dataclass
class Inputs:
    """What the rules read: the views, the consumed table, a way to write scratch
    views (materialize(name, df, observe) -> (df, observed)), and the groups with a
    read_committed `run` row."""
    views: Views
    consumed: DataFrame
    materialize: object
    read_committed_groups: set[str]
    # every history table's frame (a family reads its own) and the run's events
    tables: dict = field(default_factory=dict)
    events: list = field(default_factory=list)
    _memo: dict = field(default_factory=dict)
    no_rows: set[str] = field(default_factory=set)   # kinds known to have none

    def once(self, name: str, make):
        if name not in self._memo:
            self._memo[name] = make(self)
        return self._memo[name]


def unless_none(x: Inputs, kind: str, rows: int, df: DataFrame) -> DataFrame:
    """df, or (when its key set is known to be empty) the same columns and no rows,
    planned as an empty relation: no scan; the kind is then in x.no_rows, so its
    (empty) file is written from its schema, with no Spark job."""
    if rows:
        return df
    x.no_rows.add(kind)
    return df.limit(0)


# -- filters of the records view --

def lost(x: Inputs) -> DataFrame:
    """lost: an `acked` record never consumed in any phase (by any consumer)
    (reconcile.LOST)."""
    return unless_none(x, "lost", x.views.sizes["lost"],
                        x.views.records.where(LOST()).select(*PRODUCED_COLS))


def recovered(x: Inputs) -> DataFrame:
    """recovered: an `indeterminate` record that was consumed (counted, never a
    violation) (reconcile.RECOVERED)."""
    return unless_none(x, "recovered", x.views.sizes["recovered"], x.views.records.where(
        RECOVERED()).select(*PRODUCED_COLS, *POS_COLS, "deliveries"))


def unexpected(x: Inputs) -> DataFrame:
    """unexpected: a consumed record_id that was never sent, or was `failed` outside
    a transaction (records of aborted transactions are judged by aborted_read
    alone) (reconcile.UNEXPECTED). Rows with a null record_id are not counted here
    (consumed_foreign)."""
    return unless_none(x, "unexpected", x.views.sizes["unexpected"], x.views.records.where(
        UNEXPECTED()).select(
        F.when(F.col("producer").isNull(), F.lit("never sent"))
        .otherwise(F.lit("failed outside a transaction")).alias("reason"),
        *PRODUCED_COLS, *POS_COLS, "deliveries"))


def reordered(x: Inputs) -> DataFrame:
    """reordered: same producer and partition, seq a < seq b but offset a > offset b.
    Counted (the spec): records whose position offset is lower than the highest
    offset among the same producer's earlier seqs on that partition."""
    earlier = (Window.partitionBy("producer", "pos_topic", "pos_partition").orderBy("seq")
               .rowsBetween(Window.unboundedPreceding, -1))
    return (x.views.records.where(F.col("producer").isNotNull() & CONSUMED())
            .select("record_id", "producer", "seq", "status", "topic", "partition",
                    "ack_ts_us", "acked_by", *POS_COLS)
            .withColumn("earlier_max_offset", F.max("pos_offset").over(earlier))
            .where(F.col("pos_offset") < F.col("earlier_max_offset")))


def redelivered(x: Inputs) -> DataFrame:
    """redelivered: the same (partition, offset) delivered more than once to one group
    in `run` (counted: k − 1 extra deliveries for a position delivered k times)."""
    return unless_none(x, "redelivered", x.views.sizes["redelivered"], x.views.groups.where(
        F.col("deliveries") > 1).select(
        "group_id", *OFFSET, "deliveries", (F.col("deliveries") - 1).alias("extra_deliveries"),
        "first_recv_us"))


# -- kinds that read rows of the consumed table --

def duplicate(x: Inputs) -> DataFrame:
    """duplicate: one record_id consumed at two or more distinct (topic, partition,
    offset); every delivery of it is a row."""
    n = x.views.sizes["duplicate_ids"]
    dup = _duplicate_ids(x)
    return unless_none(x, "duplicate", n, x.once("watched", _watched).join(
        small(dup, n), "record_id").select(
        "record_id", "producer", "seq", "status", "ack_ts_us", "acked_by", "n_positions", *OFFSET,
        "consumer", "group_id", "phase", "recv_ts_us", "leader_epoch"))


def divergent(x: Inputs) -> DataFrame:
    """divergent: two consumers saw different record_ids at the same (topic,
    partition, offset); every delivery there is a row."""
    n = x.views.sizes["divergent_offsets"]
    return unless_none(x, "divergent", n, _with_ack(x, x.once("watched", _watched).join(
        small(_divergent_at(x), n), list(OFFSET)).select(
        *OFFSET, "record_id", "consumer", "group_id", "phase", "isolation", "recv_ts_us"),
        "record_id", n))


def overwritten(x: Inputs) -> DataFrame:
    """overwritten: `acked` at (partition, offset) but another record (or a payload the
    harness did not write) was consumed at that offset; one row per (record, other
    delivery there)."""
    candidates, n = x.once("candidates", _overwrite_candidates)
    return unless_none(x, "overwritten", n, (
        x.once("watched", _watched)
        .select(*OFFSET, F.col("record_id").alias("consumed_record_id"),
                F.col("consumer").alias("consumed_by"),
                F.col("leader_epoch").alias("consumed_leader_epoch"))
        .join(small(candidates, n), list(OFFSET))
        .where(F.col("consumed_record_id").isNull()
               | (F.col("consumed_record_id") != F.col("record_id")))
        .select("record_id", "producer", "seq", *OFFSET, "send_ts_us", "ack_ts_us", "acked_by",
                "consumed_record_id", "consumed_by", "consumed_leader_epoch")))


def skipped(x: Inputs) -> DataFrame:
    """skipped: the group committed past an offset that the drain saw but no `run`
    consumer of that group received. Reading: commits with ok = true, a group and
    consumer != 'drain'; an offset whose drained record (the lowest record_id if the
    drain saw several) is of an aborted transaction is not skipped by a group that
    reads committed (any of its run rows read_committed)."""
    n = x.views.sizes["missed"]
    missed = _missed(x)
    drained = (x.once("watched", _watched)
               .where((F.col("phase") == "drain") & F.col("record_id").isNotNull())
               .groupBy(*OFFSET).agg(F.min("record_id").alias("drain_record_id")))
    rows = missed.join(drained, list(OFFSET), "left")
    aborted = _aborted(x, rows.select("drain_record_id"), n)
    group_rc = x.consumed.sparkSession.createDataFrame(
        [(g, True) for g in sorted(x.read_committed_groups)],
        "group_id string, group_read_committed boolean")
    return unless_none(x, "skipped", n, _with_ack(
        x, rows.join(aborted, "drain_record_id", "left")
        .join(F.broadcast(group_rc), "group_id", "left")
        .where(~(F.coalesce("drain_record_aborted", F.lit(False))
                 & F.coalesce("group_read_committed", F.lit(False))))
        .select("group_id", *OFFSET, "committed_offset", "drain_record_id"),
        "drain_record_id", n))


def poll_skip(x: Inputs) -> DataFrame:
    """poll_skip: an offset strictly between the lowest and the highest offset that one
    `run` consumer received from one partition in one assignment generation, at
    which the drain saw a record this consumer was allowed to read (read_committed:
    not a record of an aborted transaction), and which that consumer did not receive
    in that generation. Counted: distinct (consumer, topic, partition, offset).

    Reading: the offsets between lowest and highest not received are those a
    delivery jumped over (in poll_seq order, an offset above the highest received
    before + 1: reconcile's poll view) and that no later delivery of the generation
    filled."""
    jumped, n = x.once("jumped", _jumped)
    watched = x.once("watched", _watched)
    received = (watched.where(F.col("phase") == "run")
                .select(*POLL_KEY, "offset").distinct())
    drained = (watched.where(F.col("phase") == "drain")
               .select(*OFFSET, F.col("record_id").alias("drain_record_id")))
    rows = (jumped.join(received, [*POLL_KEY, "offset"], "left_anti")
            .join(drained, list(OFFSET)))
    aborted = _aborted(x, rows.select("drain_record_id"), n)
    allowed = ~(F.coalesce("drain_record_aborted", F.lit(False))
                & (F.col("isolation") == "read_committed"))
    return unless_none(x, "poll_skip", n, _with_ack(
        x, rows.join(aborted, "drain_record_id", "left").where(allowed)
        .select("consumer", "group_id", "assignment", *OFFSET, "isolation",
                "jumped_from", "jumped_to", "drain_record_id"),
        "drain_record_id", n))


def nonmonotonic_poll(x: Inputs) -> DataFrame:
    """nonmonotonic_poll: a delivery to a `run` consumer, in one assignment generation,
    of an offset of one partition lower than or equal to the highest offset it had
    received from that partition earlier in that generation (earlier: lower
    poll_seq). Counted: every such delivery. Rows with a null poll_seq or assignment
    are not judged (summary: poll_checks.left_out)."""
    went_back = x.views.sizes["went_back"]
    return unless_none(x, "nonmonotonic_poll", went_back, _with_ack(x, x.views.poll.where(
        F.col("offset") <= F.col("earlier_max_offset")).select(
        "consumer", "group_id", "assignment", *OFFSET, "poll_seq", "earlier_max_offset",
        "record_id", "recv_ts_us"), "record_id", went_back))


# -- shared inputs, each computed once --

def _with_ack(x: Inputs, rows: DataFrame, id_col: str, n: int) -> DataFrame:
    """rows (about n) with the ack_ts_us and acked_by of the record `id_col` names, so
    that they are explained like the others (anomaly_output.Explainer)."""
    ids = rows.select(F.col(id_col).alias("record_id")).where(
        F.col("record_id").isNotNull()).distinct()
    acks = (x.views.records.join(small(ids, n), "record_id", "left_semi")
            .select(F.col("record_id").alias(id_col), "ack_ts_us", "acked_by"))
    return rows.join(acks, id_col, "left")


def _duplicate_ids(x: Inputs) -> DataFrame:
    return x.views.records.where(F.col("n_positions") >= 2).select(
        "record_id", "producer", "seq", "status", "ack_ts_us", "acked_by", "n_positions")


def _divergent_at(x: Inputs) -> DataFrame:
    return x.views.offsets.where(DIVERGENT()).select(*OFFSET)


def _missed(x: Inputs) -> DataFrame:
    return x.views.groups.where(MISSED()).select("group_id", *OFFSET, "committed_offset")


def _aborted(x: Inputs, ids: DataFrame, n: int) -> DataFrame:
    """(drain_record_id, drain_record_aborted) of those of `ids` (about n rows) that
    are records of aborted transactions."""
    return (x.views.records.where(F.col("txn_outcome") == "aborted")
            .select(F.col("record_id").alias("drain_record_id"))
            .join(small(ids.where(F.col("drain_record_id").isNotNull()).distinct(), n),
                  "drain_record_id", "left_semi")
            .select("drain_record_id", F.lit(True).alias("drain_record_aborted")))


def _overwrite_candidates(x: Inputs) -> tuple[DataFrame, int]:
    """Acked records that may have been overwritten, and how many. One consumed at its
    acked offset, where no other record_id and no foreign payload was seen, is not:
    so only those whose position is elsewhere or unknown, and those acked at a
    divergent offset, are checked against the consumed rows at their offset."""
    n = x.views.sizes
    cols = ("record_id", "producer", "seq", *OFFSET, "send_ts_us", "ack_ts_us", "acked_by")
    if not (n["moved_acked"] or n["divergent_offsets"]):
        return x.views.records.select(*cols).limit(0), 0
    acked_at, elsewhere = x.views.records.where(ACKED_AT()), ~AT_OWN_OFFSET()
    if n["divergent_offsets"]:
        acked_at = acked_at.join(small(_divergent_at(x).withColumn("_div", F.lit(True)),
                                       n["divergent_offsets"]), list(OFFSET), "left")
        elsewhere = elsewhere | F.col("_div").isNotNull()
    df, seen = x.materialize("overwrite_candidates", acked_at.where(elsewhere).select(*cols),
                             {"rows": F.count(F.lit(1))})
    return df, int(seen["rows"])


def _jumped(x: Inputs) -> tuple[DataFrame, int]:
    """Every offset a judged delivery jumped over: (consumer, assignment, topic,
    partition, offset) with the jump's ends, and how many."""
    n = int(x.views.sizes["jumped_offsets"])
    gaps = x.views.poll.where(F.col("offset") > F.col("earlier_max_offset") + 1).select(
        *POLL_KEY, "group_id", "isolation", F.col("earlier_max_offset").alias("jumped_from"),
        F.col("offset").alias("jumped_to"))
    offsets = gaps.select("*", F.explode(F.sequence(F.col("jumped_from") + 1,
                                                    F.col("jumped_to") - 1)).alias("offset"))
    return (offsets if n else offsets.limit(0)), n


def _watched(x: Inputs) -> DataFrame:
    """The consumed rows the keyed rules read, in one scan: at divergent offsets,
    overwrite candidates' offsets, missed offsets and jumped-over offsets, and every
    row of a duplicated record; written once."""
    n = x.views.sizes
    candidates, n_candidates = x.once("candidates", _overwrite_candidates)
    jumped, n_jumped = x.once("jumped", _jumped)
    offset_sets = [(df.select(*OFFSET), rows) for df, rows in (
        (_divergent_at(x), n["divergent_offsets"]), (candidates, n_candidates),
        (_missed(x), n["missed"]), (jumped, n_jumped)) if rows]
    if not (offset_sets or n["duplicate_ids"]):
        return x.consumed.limit(0)      # no key set (a passing run): no rows, no job
    ids = (_duplicate_ids(x).select("record_id"), n["duplicate_ids"])
    return x.materialize("watched", rows_matching(x.consumed, offset_sets, ids))[0]


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
