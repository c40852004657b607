"""The transactions family's checker: aborted_read and torn_transaction, read from
the records family's views (a transaction's records are records first: their
positions and how they were consumed are the records view's)."""
from __future__ import annotations

from pyspark.sql import DataFrame, Window
from pyspark.sql import functions as F

from families.records.checker import POS_COLS, Inputs, unless_none
from families.records.views import ABORTED_READ, CONSUMED, PRODUCED_COLS, small


def aborted_read(x: Inputs) -> DataFrame:
    """aborted_read: a `read_committed` consumer saw a record whose txn_outcome is
    `aborted` (families/records/views.py ABORTED_READ)."""
    return unless_none(x, "aborted_read", x.views.sizes["aborted_read"], x.views.records.where(
        ABORTED_READ()).select(*PRODUCED_COLS, *POS_COLS))


TXN_KEY = ("producer", "txn_seq")
_LOG_AT = ("producer", "pos_topic", "pos_partition", "pos_offset")


def torn_transaction(x: Inputs) -> DataFrame:
    """torn_transaction: a transaction that was not all-or-nothing: a `committed` one of
    which some records were consumed (in any phase) and some never were, or an `aborted`
    one of which a read_committed consumer saw some records but not all (wholly seen, it
    is aborted_read alone). Counted: distinct (producer, txn_seq). Every record of such a
    transaction is a row (`visible`: in the part that was seen); an aborted record that
    was seen names the transaction that committed it: its producer's next record in that
    partition's log (`committed_with_txn`, at `committed_with_offset`)."""
    sizes = x.views.sizes
    visible = F.coalesce(F.when(F.col("txn_outcome") == "committed", CONSUMED())
                         .otherwise(F.col("read_committed_seen") == 1), F.lit(False))
    txn = Window.partitionBy(*TXN_KEY)
    rows = (x.views.records.where(F.col("txn_seq").isNotNull()
                                  & F.col("txn_outcome").isin("committed", "aborted"))
            .select(*PRODUCED_COLS, *POS_COLS, visible.alias("visible"))
            .withColumn("txn_records", F.count(F.lit(1)).over(txn))
            .withColumn("txn_visible", F.sum(F.col("visible").cast("long")).over(txn))
            .where((F.col("txn_visible") > 0) & (F.col("txn_visible") < F.col("txn_records"))))
    n = sizes["aborted_read"] + sizes["unseen_committed"]  # a torn one has one or the other
    if not n:
        return unless_none(x, "torn_transaction", 0, rows.withColumns(
            {"committed_with_txn": F.lit(None).cast("long"),
             "committed_with_offset": F.lit(None).cast("long"),
             "explanation": F.lit(None).cast("string")}))
    seen_aborted = rows.where(F.col("visible") & (F.col("txn_outcome") == "aborted"))
    later = (x.views.records.where(CONSUMED() & (F.col("txn_outcome") == "committed"))
             .select(*_LOG_AT[:3], F.col("pos_offset").alias("o"), F.col("txn_seq").alias("t"))
             .join(small(seen_aborted.select(*_LOG_AT).distinct(), sizes["aborted_read"]),
                   list(_LOG_AT[:3]))
             .where(F.col("o") > F.col("pos_offset"))
             .groupBy(*_LOG_AT).agg(F.min(F.struct("o", "t")).alias("next")))
    return rows.join(later, list(_LOG_AT), "left").select(
        *rows.columns, F.col("next.t").alias("committed_with_txn"),
        F.col("next.o").alias("committed_with_offset"), _torn_words())


def _torn_words() -> F.Column:
    """The row in words: "record p0-12 of aborted transaction 57 was committed with
    transaction 58 at t-2 offset 345" (the offending part; null for the rest)."""
    rid, seq = F.col("record_id"), F.col("txn_seq")
    at = F.format_string("%s-%d offset %d", "pos_topic", "pos_partition", "pos_offset")
    aborted_seen = F.when(
        F.col("committed_with_txn").isNotNull(),
        F.format_string("record %s of aborted transaction %d was committed with transaction "
                        "%d at %s", rid, seq, F.col("committed_with_txn"), at)).otherwise(
        F.format_string("record %s of aborted transaction %d is visible to read_committed "
                        "at %s", rid, seq, at))
    missing = F.format_string("record %s of committed transaction %d was never consumed "
                              "(%d of its %d records were)", rid, seq, F.col("txn_visible"),
                              F.col("txn_records"))
    aborted = F.col("txn_outcome") == "aborted"
    return (F.when(aborted & F.col("visible"), aborted_seen)
            .when(~aborted & ~F.col("visible"), missing).alias("explanation"))
