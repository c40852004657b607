"""The packed path: every view from one aggregation of produced and consumed together.

The general path (reconcile.build_views) shuffles consumed three times (by
record_id, by offset, by group and offset) and joins the per-record aggregate
with produced. When the history's names fit small catalogs (Catalog: at most
127 topics, partitions and offsets within the packed position key, at most
MAX_PRODUCERS producers and MAX_GROUPS consumer groups), this path shuffles
the big tables once:

1. `records`: produced and consumed rows, each reduced to a few integers
   (position packed in one long, names as catalog indexes, flags as bits),
   unioned and aggregated by record_id in one hash aggregation. Besides the
   record's outcome it keeps the lowest position it was consumed at (and the
   highest, where it differs), and per consumer group (a bit mask) whether a
   `run` consumer of the group received it.
2. For a record consumed at exactly one position (almost all), that position
   is its position, the only record there unless two records claim it, and
   its groups' deliveries are the deliveries of that position. So the
   per-offset and per-group facts are only *computed* at the few positions
   where that does not hold: positions claimed by two records, by a record
   consumed at several positions (a duplicate), or by a foreign payload. One
   narrow aggregation by position finds them (`special`). One scan of the
   view then keeps the few records three rules read whole (`notable`:
   duplicates, FLAGGED records, acked records moved or acked at a special
   position). Filters and observations over the whole view are written on its
   numbers (_Raw), never on the decoded names.
3. One scan of consumed (`watched`) fetches every row the exact rules still
   need: all rows at those positions, at acked offsets of records that may
   have been overwritten, at positions a group may have skipped, and every
   row of duplicated or redelivered records. The duplicates' exact positions,
   the per-offset facts and per-(group, position) deliveries at the special
   positions (`offsets`, `groups`, reduced to those) are computed from those
   rows with the general path's own functions.

The anomaly frames (spark_reports/anomalies.py) then read the same views as on
the general path. Measured at 10 M records: see benchmarks/RESULTS.md.
"""
from __future__ import annotations

from dataclasses import dataclass
from functools import reduce

from pyspark.sql import DataFrame, Window
from pyspark.sql import functions as F

from spark_reports.anomalies import (REORDERED_COLS, overwrite_candidates, rows_matching,
                                     watched_rows)
from spark_reports.reconcile import (DIVERGENT, FLAGGED, MAX_OFFSET,
                                     MAX_PARTITION, MAX_TOPICS, MISSED, OFFSET, PRODUCED_EXTRA,
                                     Keyed, Views, _groups, _n, _offsets, _per_record,
                                     _positions, highest_commits, pack_position, small,
                                     unpack_position)

MAX_PRODUCERS = 256      # names are looked up in a literal array: linear per row
MAX_GROUPS = 62          # one bit each in a long mask
STATUSES = ("acked", "failed", "indeterminate")
TXN_OUTCOMES = ("committed", "aborted", "unknown")


@dataclass(frozen=True)
class Catalog:
    """Sorted names, or None where the history does not fit this path."""
    topics: list[str] | None
    producers: list[str] | None
    groups: list[str] | None

    @property
    def packed(self) -> bool:
        return None not in (self.topics, self.producers, self.groups)


def catalog_from(values) -> Catalog:
    """Topics, producers and consumer groups from validation's scan (validate.HistoryValues)."""
    topics = sorted(values.topics)
    # The top partition and offset values are reserved for "null" on produced rows.
    part, off = values.bounds["partition"], values.bounds["offset"]
    fits = (len(topics) <= MAX_TOPICS and (part is None or (part[0] >= 0 and part[1] < MAX_PARTITION))
            and (off is None or (off[0] >= 0 and off[1] < MAX_OFFSET)))
    producers, groups = sorted(values.producers), sorted(values.run_groups)
    return Catalog(topics if fits else None,
                   producers if len(producers) <= MAX_PRODUCERS else None,
                   groups if len(groups) <= MAX_GROUPS else None)


def _lookup(names) -> "F.Column":
    return F.array(*[F.lit(n) for n in names])


def _index(names, col: str) -> "F.Column":
    """1-based index of col in names (0 when absent or null)."""
    return F.coalesce(F.array_position(_lookup(names), F.col(col)), F.lit(0)).cast("long")


def _name(names, idx: "F.Column") -> "F.Column":
    return F.when(idx > 0, F.element_at(_lookup(names), idx.cast("int")))


# The union's one int of flags. Both: bit 0 = a produced row. Consumed: bit 1 drain,
# bit 2 run, bit 3 read_committed, bit 4 run with a group, bits 8.. group index.
# Produced: bits 1-2 status, bit 3 in a transaction, bits 4-5 txn_outcome, bits 8..
# producer index (both indexes 1-based).
def _union(produced: DataFrame, consumed: DataFrame, cat: Catalog) -> DataFrame:
    code = lambda col, values: F.coalesce(  # noqa: E731 - 1-based, 0 for null
        F.array_position(_lookup(values), F.col(col)), F.lit(0)).cast("int")
    p = produced.select(
        "record_id", pack_position(cat.topics, null_as_max=True).alias("a"),
        F.col("send_ts_us").alias("b"), F.col("ack_ts_us").alias("d"), F.col("seq").alias("e"),
        (F.lit(1) + code("status", STATUSES) * 2 + F.col("txn_id").isNotNull().cast("int") * 8
         + code("txn_outcome", TXN_OUTCOMES) * 16
         + _index(cat.producers, "producer").cast("int") * 256).alias("f"))
    run_group = (F.col("phase") == "run") & F.col("group_id").isNotNull()
    c = consumed.where(F.col("record_id").isNotNull()).select(
        "record_id", pack_position(cat.topics).alias("a"), F.col("recv_ts_us").alias("b"),
        F.lit(None).cast("long").alias("d"), F.lit(None).cast("long").alias("e"),
        ((F.col("phase") == "drain").cast("int") * 2 + (F.col("phase") == "run").cast("int") * 4
         + (F.col("isolation") == "read_committed").cast("int") * 8
         + run_group.cast("int") * 16
         + F.when(run_group, _index(cat.groups, "group_id").cast("int") * 256)
         .otherwise(0)).alias("f"))
    return p.unionByName(c)


def _aggregate(produced: DataFrame, consumed: DataFrame, cat: Catalog) -> DataFrame:
    """One row per record_id, every column a number (written as is: decoding the names
    on write cost ~12 s of 58 at 10 M records; _decode does it on read).

    Columns whose value no rule reads are kept only as what the rules read, so most
    of them are null or bits on write (a null costs Parquet a definition level, a
    long 8 bytes; measured 5 of 91 CPU-s writing the view at 10 M records, 4 of 11
    reading it): `pk_hi` only where it differs from `pk_lo` (a duplicate),
    `drained` instead of the drain's first receipt, `run_redelivered` instead of
    the count of `run` deliveries to groups. `produced_rows` is observed while
    writing, not written (UNWRITTEN)."""
    f = F.col("f")
    is_p = f.bitwiseAND(1) == 1
    is_c = ~is_p
    bit = lambda n: f.bitwiseAND(n) != 0  # noqa: E731
    when_c = lambda cond, v: F.when(is_c & cond, v)  # noqa: E731
    group_bit = F.expr("shiftleft(1L, shiftright(f, 8) - 1)")
    agg = _union(produced, consumed, cat).repartition("record_id").groupBy("record_id").agg(
        F.min(F.when(is_c, F.col("a"))).alias("pk_lo"), F.max(F.when(is_c, F.col("a"))).alias("_hi"),
        F.max(when_c(bit(2), F.lit(True))).alias("drained"),
        F.min(when_c(bit(4), F.col("b"))).alias("first_run_recv_us"),
        F.max(when_c(F.lit(True), bit(8).cast("int"))).alias("read_committed_seen"),
        F.sum(when_c(F.lit(True), F.lit(1))).alias("deliveries"),
        F.sum(when_c(bit(16), F.lit(1))).alias("_run_deliveries"),
        F.bit_or(when_c(bit(16), group_bit)).alias("group_mask"),
        F.max(F.when(is_p, f)).alias("pf"), F.max(F.when(is_p, F.col("a"))).alias("ppk"),
        F.max(F.when(is_p, F.col("b"))).alias("send_ts_us"), F.max("d").alias("ack_ts_us"),
        F.max("e").alias("seq"), F.sum(is_p.cast("int")).alias("produced_rows"))
    hi = F.col("_hi")
    return agg.select(
        "record_id", "pk_lo", F.when(hi != F.col("pk_lo"), hi).alias("pk_hi"), "drained",
        "first_run_recv_us", "read_committed_seen", "deliveries", "group_mask",
        # some group received the record more than once (a duplicate's positions are
        # all special, so exact anyway)
        F.when(F.col("_run_deliveries") > F.bit_count("group_mask"), True).alias("run_redelivered"),
        "pf", "ppk", "send_ts_us", "ack_ts_us", "seq", "produced_rows")


UNWRITTEN = ("produced_rows",)


def _decode(raw: DataFrame, cat: Catalog) -> DataFrame:
    """_aggregate's columns plus the general path's records view (its columns, same
    meaning)."""
    pf, single = F.col("pf"), _Raw().single
    topic, partition, offset = unpack_position(F.col("ppk"), cat.topics)
    pos_topic, pos_partition, pos_offset = unpack_position(F.when(single, F.col("pk_lo")), cat.topics)
    return raw.select(
        "*", _name(cat.producers, F.shiftright(pf, 8)).alias("producer"),
        topic.alias("topic"), partition.alias("partition"), offset.alias("offset"),
        _name(STATUSES, F.shiftright(pf, 1).bitwiseAND(3)).alias("status"),
        (pf.bitwiseAND(8) != 0).alias("in_txn"),
        _name(TXN_OUTCOMES, F.shiftright(pf, 4).bitwiseAND(3)).alias("txn_outcome"),
        # a record consumed at several positions is a duplicate: its count and
        # position come from its consumed rows (_duplicates, _with_positions)
        F.when(single, 1).when(F.col("pk_lo").isNotNull(), 2).alias("n_positions"),
        pos_topic.alias("pos_topic"), pos_partition.alias("pos_partition"),
        pos_offset.alias("pos_offset"),
        F.when(single, F.col("drained").isNotNull()).alias("pos_from_drain"),
        F.when(single, F.col("pk_lo")).alias("pk"))


class _Raw:
    """The decoded view's conditions (reconcile.FLAGGED, ACKED_AT, …) on _aggregate's
    numbers, for filters and observations over the whole view: on the decoded view
    Spark would build the names (strings) of every row first. Observing the decoded
    view cost 20 of 67 CPU-s of the records write at 10 M records. The casebook
    compares both paths."""

    def __init__(self):
        pf, lo, hi, ppk = F.col("pf"), F.col("pk_lo"), F.col("pk_hi"), F.col("ppk")
        status = F.shiftright(pf, 1).bitwiseAND(3)      # STATUSES index; null: not produced
        self.consumed = lo.isNotNull()
        self.single = self.consumed & hi.isNull()
        self.duplicate = hi.isNotNull()
        self.acked_at = F.coalesce(
            (status == 1) & (F.shiftright(ppk, 40).bitwiseAND(MAX_PARTITION) != MAX_PARTITION)
            & (ppk.bitwiseAND(MAX_OFFSET) != MAX_OFFSET), F.lit(False))
        self.at_own = self.single & (lo == ppk)
        in_txn = pf.bitwiseAND(8) != 0
        aborted = F.shiftright(pf, 4).bitwiseAND(3) == 2    # TXN_OUTCOMES index
        self.flagged = F.coalesce(
            ((status == 1) & ~self.consumed) | ((status == 3) & self.consumed)
            | (self.consumed & (pf.isNull() | ((status == 2) & ~in_txn)))
            | ((F.col("read_committed_seen") == 1) & aborted), F.lit(False))
        # a record at one position that some group received more than once there
        self.redelivered = self.single & F.col("run_redelivered").isNotNull()
        # the records of aborted transactions skipped can read: those the drain saw
        self.aborted_drained = F.coalesce(aborted & F.col("drained").isNotNull(), F.lit(False))

    def sizes(self) -> dict:
        return {
            "duplicate_ids": _n(self.duplicate),
            "moved_acked": _n(self.acked_at & ~self.at_own),
            "redelivered_ids": _n(self.redelivered),
            "flagged": _n(self.flagged),
            "produced_twice": _n(F.col("produced_rows") > 1),
            "run_start_us": F.min("send_ts_us"),
            "run_end_us": F.max(F.greatest("send_ts_us", "ack_ts_us"))}


def _special_positions(positions: DataFrame, consumed: DataFrame, dup_ids: tuple,
                       foreign: int, topics) -> DataFrame:
    """The positions where the single-position shortcut does not hold: claimed by two
    records, by a duplicated record, or by a foreign payload. One aggregation of the
    records' single positions (`pk`) and the few consumed rows of duplicates and
    foreign payloads; what was seen there is computed from the watched rows."""
    mine = positions.select("pk", F.lit(0).alias("special"))
    rows = consumed.where(F.col("record_id").isNull()) if foreign else None
    if dup_ids[1]:
        of_dups = consumed.join(small(dup_ids[0], dup_ids[1]), "record_id", "left_semi")
        rows = of_dups if rows is None else rows.unionByName(of_dups)
    if rows is not None:
        mine = mine.unionByName(rows.select(pack_position(topics).alias("pk"), F.lit(1).alias("special")))
    at = (mine.repartition("pk").groupBy("pk").agg(
        F.max("special").alias("special"), F.count(F.lit(1)).alias("claims"))
        .where((F.col("claims") > 1) | (F.col("special") == 1)))
    topic, partition, offset = unpack_position(F.col("pk"), topics)
    return at.select(topic.alias("topic"), partition.alias("partition"), offset.alias("offset"),
                     "pk")


def _missed_alone(written: DataFrame, cond: "_Raw", commits: DataFrame, special: DataFrame,
                  n_special: int, cat: Catalog) -> DataFrame:
    """(group, position) skipped-candidates at single-claim positions: the drain saw
    the record there, the group committed past it, and no run consumer of the group
    received it (its bit is not in the record's mask). On the view's numbers: the
    drained records below a commit are nearly all of them."""
    high = highest_commits(commits).select(
        "group_id", "topic", "partition", "committed_offset",
        F.shiftright(pack_position(cat.topics, cols=("topic", "partition", F.lit(0))), 40)
        .alias("h_tp"),
        _index(cat.groups, "group_id").alias("gbit"))
    missed = (written.where(cond.single & F.col("drained").isNotNull())
              .select(F.col("pk_lo").alias("pk"), "group_mask")
              .join(small(special.select("pk"), n_special), "pk", "left_anti")
              .join(F.broadcast(high.where(F.col("h_tp") >= 0)),
                    (F.shiftright(F.col("pk"), 40) == F.col("h_tp"))
                    & (F.col("pk").bitwiseAND(MAX_OFFSET) < F.col("committed_offset")))
              .where((F.col("gbit") == 0)
                     | (F.expr("shiftright(coalesce(group_mask, 0L), gbit - 1) & 1") == 0)))
    return missed.select("group_id", "topic", "partition",
                         F.col("pk").bitwiseAND(MAX_OFFSET).alias("offset"),
                         F.lit(0).cast("long").alias("deliveries"), "committed_offset")


def build_views(produced: DataFrame, consumed: DataFrame, commits: DataFrame, cat: Catalog,
                foreign: int, materialize, on_records=None) -> Views:
    """The general path's views, on this path: `records` complete, `offsets` and
    `groups` reduced to the positions the anomaly rules can find anything at.
    on_records(metric_inputs, sizes) is called as soon as the records view is written
    (metrics.metric_inputs' columns; the sizes observed so far)."""
    raw, cond = _aggregate(produced, consumed, cat), _Raw()
    written, sizes = materialize("records", raw, cond.sizes(),
                                 keep=[c for c in raw.columns if c not in UNWRITTEN])
    if on_records is not None:
        on_records(_metric_inputs(written), dict(sizes))
    records = _decode(written, cat)
    n = dict(sizes)
    dup_ids = (written.where(cond.duplicate).select("record_id"), n["duplicate_ids"])
    special, seen = materialize("special", _special_positions(
        written.where(cond.single).select(F.col("pk_lo").alias("pk")), consumed, dup_ids,
        foreign, cat.topics), {"rows": F.count(F.lit(1))})
    n["special"] = seen["rows"]
    # An acked record at its own offset may be overwritten only where something else
    # was seen, i.e. at a special position (a superset of the divergent ones): the
    # general rule runs on the records moved or acked at a special position only.
    # One scan of the view for the few records four rules read whole: duplicates,
    # FLAGGED records, the acked records moved or acked at a special position
    # (overwrite candidates), and the drained records of aborted transactions
    # (skipped's exception); one scan each cost 4-6 s at 10 M.
    at_special = small(special.select(F.col("pk").alias("ppk"), F.lit(True).alias("_sp")),
                       n["special"])
    maybe = cond.acked_at & (~cond.at_own | F.col("_sp").isNotNull())
    flags = {"_dup": cond.duplicate, "_flag": cond.flagged, "_maybe": maybe,
             "_aborted": cond.aborted_drained}
    notable, _ = materialize("notable", written.join(at_special, "ppk", "left").where(
        reduce(lambda a, b: a | b, flags.values())).select(
        *written.columns, *[c.alias(k) for k, c in flags.items()]))

    def notable_where(flag: str) -> DataFrame:
        return _decode(notable.where(F.col(flag)).drop(*flags), cat)
    candidates, n_candidates = overwrite_candidates(
        notable_where("_maybe"), {**n, "divergent_offsets": n["special"]},
        special.select(*OFFSET), materialize)
    alone, seen = materialize("missed_alone", _missed_alone(
        written, cond, commits, special, n["special"], cat), {"rows": F.count(F.lit(1))})
    n_alone = seen["rows"]
    redelivered = written.where(cond.redelivered).select("record_id")
    watched = watched_rows(
        consumed, [(df.select(*OFFSET), rows) for df, rows in (
            (special, n["special"]), (candidates, n_candidates), (alone, n_alone)) if rows],
        (dup_ids[0].unionByName(redelivered), n["duplicate_ids"] + n["redelivered_ids"]),
        materialize)
    at_special = [(special.select(*OFFSET), n["special"])] if n["special"] else []
    offsets, seen = materialize("offsets", _offsets(rows_matching(watched, at_special, (None, 0))),
                                {"divergent_offsets": _n(DIVERGENT())})
    n.update(seen)
    # per-(group, position) facts where the shortcut does not hold: every row at a
    # special position, every row of a redelivered record
    exact = _groups(rows_matching(watched, at_special, (redelivered, n["redelivered_ids"])),
                    commits, offsets)
    groups, seen = materialize("groups", exact.unionByName(alone), {"missed": _n(MISSED())})
    n.update(seen)
    dups = _duplicates(notable_where("_dup"), watched, dup_ids, cat.topics, materialize)
    return Views(records, offsets, groups, n, Keyed(watched, candidates, n_candidates),
                 ready={
                     "duplicates": dups,
                     "aborted": notable_where("_aborted"),
                     "flagged": _flagged(notable_where("_flag"), dups, produced, n,
                                         materialize),
                     "reordered": _reordered(written, cond, dups, n, cat, materialize)})


def _metric_inputs(written: DataFrame) -> DataFrame:
    """metrics.metric_inputs' columns from the view's numbers: tp = topic id << 32 |
    partition (metrics.tp_key)."""
    partition = F.shiftright("ppk", 40).bitwiseAND(MAX_PARTITION)
    return written.select(
        F.col("pf").isNotNull().alias("sent"),
        F.coalesce(F.shiftright("pf", 1).bitwiseAND(3) == 1, F.lit(False)).alias("acked"),
        "send_ts_us", "ack_ts_us", "first_run_recv_us",
        F.when(partition != MAX_PARTITION, F.shiftright("ppk", 56) * (1 << 32) + partition)
        .alias("tp"))


POSITION = ("n_positions", "pos_topic", "pos_partition", "pos_offset", "pos_from_drain")


def _duplicates(records: DataFrame, watched: DataFrame, dup_ids: tuple, topics,
                materialize) -> DataFrame:
    """The duplicated records, with their position and count from their consumed rows."""
    dups = records.where(F.col("n_positions") >= 2)
    if not dup_ids[1]:
        return dups
    rows = watched.join(small(dup_ids[0], dup_ids[1]), "record_id", "left_semi")
    exact = _per_record(_positions(rows, topics), topics).select("record_id", *POSITION)
    return materialize("duplicates", dups.drop(*POSITION).join(exact, "record_id"))[0]


def _with_positions(rows: DataFrame, dups: DataFrame, n_dups: int) -> DataFrame:
    """rows with the duplicated records' position columns taken from dups."""
    if not n_dups:
        return rows
    fix = dups.select("record_id", *[F.col(c).alias(f"_{c}") for c in POSITION])
    return rows.join(small(fix, n_dups), "record_id", "left").select(
        *[F.coalesce(f"_{c}", c).alias(c) if c in POSITION else c for c in rows.columns])


def _flagged(records: DataFrame, dups: DataFrame, produced: DataFrame, n: dict,
             materialize) -> DataFrame:
    """The FLAGGED records (from the notable view) with the produced columns this path
    does not carry (key, error, txn_id, txn_seq): one scan of produced."""
    rows = records.where(FLAGGED())
    if not n["flagged"]:
        return rows.select("*", *[F.lit(None).cast(t).alias(c) for c, t in PRODUCED_EXTRA.items()])
    extra = produced.join(small(rows.select("record_id"), n["flagged"]), "record_id",
                          "left_semi").select("record_id", *PRODUCED_EXTRA)
    return materialize("flagged", _with_positions(rows, dups, n["duplicate_ids"]).join(
        extra, "record_id", "left"))[0]


def _reordered(written: DataFrame, cond: _Raw, dups: DataFrame, n: dict, cat: Catalog,
               materialize) -> DataFrame:
    """The general path's rule (a record below the highest offset of any earlier seq of
    its producer on its partition). Only three numbers are sorted, (producer index,
    partition key) as one, seq and offset, and the few rows found are matched back on
    all three: carrying the record_id through the sort took 19 s against 10 s at 10 M."""
    rows = written.where(F.col("pf").isNotNull() & cond.consumed).withColumn(
        "_pk", F.when(cond.single, F.col("pk_lo")))
    if n["duplicate_ids"]:
        # a duplicate's position is the exact one (_duplicates), not its lowest
        fix = dups.select("record_id", pack_position(
            cat.topics, cols=("pos_topic", "pos_partition", "pos_offset")).alias("_fix"))
        rows = rows.join(small(fix, n["duplicate_ids"]), "record_id", "left").withColumn(
            "_pk", F.coalesce("_fix", "_pk")).drop("_fix")
    rows = rows.select("*", (F.shiftright("pf", 8) * (1 << 23) + F.shiftright("_pk", 40)).alias("_g"),
                       F.col("_pk").bitwiseAND(MAX_OFFSET).alias("_o")).drop("_pk")
    earlier = (Window.partitionBy("_g").orderBy("seq")
               .rowsBetween(Window.unboundedPreceding, -1))
    # The window sorts each partition by (_g, seq): _g is the sort's prefix, so nearly
    # every comparison reads both rows (TimSort, ~16 CPU-s at 10 M). Sorting by one
    # long first (_g, then seq clamped to 31 bits) lets Spark radix-sort, and TimSort
    # then finds the rows already in order. The hint only orders; the window's own
    # sort stays the rule (measured 17.4 against 23.1 CPU-s).
    hint = F.col("_g") * (1 << 31) + F.least(F.greatest("seq", F.lit(0)), F.lit((1 << 31) - 1))
    presorted = rows.select("_g", "seq", "_o").repartition("_g").sortWithinPartitions(hint)
    found, seen = materialize("reordered", presorted
                              .withColumn("earlier_max_offset", F.max("_o").over(earlier))
                              .where(F.col("_o") < F.col("earlier_max_offset")),
                              {"rows": F.count(F.lit(1))})
    hits = rows.join(small(found, seen["rows"]), ["_g", "seq", "_o"]).drop("_g", "_o")
    return _with_positions(_decode(hits, cat), dups, n["duplicate_ids"]).select(*REORDERED_COLS)
