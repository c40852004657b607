"""The position path: the big tables aggregated once, by position.

The general path (reconcile.build_views) shuffles consumed three times (by
record_id, by offset, by group and offset) and joins the result with produced.
When the history's names fit small catalogs (Catalog), this path shuffles
produced and consumed once, together, keyed by *position*, and runs the
general path only on the few rows where something happened:

1. Records are numbers: rk = producer index << 40 | seq. A consumed record_id
   that is not exactly `<producer>-<seq>` of a catalogued producer is "odd"
   (never sent). Every produced row acked at a known position, and every
   consumed row, is keyed by its position (reconcile.pack_position), a
   produced row without one by -rk. One hash aggregation of the union gives the
   `positions` view: per position, the record acked there, the lowest and
   highest record seen there, and the delivery facts.
2. A position is *clean* when exactly one record was acked there, every row
   consumed there names it, and no group received it twice. That record was
   then consumed there and nowhere else: a row of it elsewhere would name a
   record not acked there, and that position would not be clean. So its row
   holds everything the rules ask of the position and the record; of the
   anomaly kinds only skipped (a group committed past it without receiving it:
   _missed) and reordered (which compares records) can find anything there.
   A record produced without a position (not acked) is complete in its row
   unless it was consumed, which makes the position it was consumed at
   exceptional.
3. Everything else is *exceptional*: those positions, the records produced or
   seen there (E), and every row of them anywhere. One scan of each table
   fetches those rows (_fetch), and the general path builds its views from them
   alone. They are few in any run worth running (measured: benchmarks/RESULTS.md).
4. The halves meet in the anomaly frames: flagged records, duplicates,
   divergent offsets and overwrite candidates are all exceptional; skipped is
   the general path's plus _missed; reordered and the metrics read both halves.

Produced record_ids must be `<producer>-<seq>`, as the spec says, for rk to
name them: identity_check verifies that, and that no record_id is produced
twice, in one small aggregation before this path runs.
"""
from __future__ import annotations

from dataclasses import dataclass
from functools import reduce

from pyspark.sql import DataFrame, Window
from pyspark.sql import functions as F

from spark_reports.anomalies import REORDERED_COLS, overwrite_candidates
from spark_reports.metrics import metric_inputs
from spark_reports.reconcile import (DIVERGENT, FLAGGED, MAX_OFFSET, MAX_PARTITION, MAX_TOPICS,
                                     OFFSET, Keyed, Views, build_views as general_views,
                                     highest_commits, pack_position, small, unpack_position)

MAX_PRODUCERS = 256      # names are looked up in a literal array: linear per row
MAX_GROUPS = 62          # one bit each in a long mask
SEQ_BITS = 40
MAX_SEQ = (1 << SEQ_BITS) - 1
STATUSES = ("acked", "failed", "indeterminate")
TXN_OUTCOMES = ("committed", "aborted", "unknown")


@dataclass(frozen=True)
class Catalog:
    """Sorted names, or None where the history does not fit this path."""
    topics: list[str] | None
    producers: list[str] | None
    groups: list[str] | None

    @property
    def fits(self) -> bool:
        return None not in (self.topics, self.producers, self.groups)


def catalog_from(values) -> Catalog:
    """Topics, producers and consumer groups from validation's scan (validate.HistoryValues)."""
    topics = sorted(values.topics)
    # The top partition and offset values are reserved for "null" on produced rows.
    part, off, seq = (values.bounds.get(c) for c in ("partition", "offset", "seq"))
    fits = (len(topics) <= MAX_TOPICS and (part is None or (part[0] >= 0 and part[1] < MAX_PARTITION))
            and (off is None or (off[0] >= 0 and off[1] < MAX_OFFSET)))
    producers, groups = sorted(values.producers), sorted(values.run_groups)
    seq_fits = seq is None or (seq[0] >= 0 and seq[1] <= MAX_SEQ)
    return Catalog(topics if fits else None,
                   producers if len(producers) <= MAX_PRODUCERS and seq_fits else None,
                   groups if len(groups) <= MAX_GROUPS else None)


def _lookup(names) -> "F.Column":
    return F.array(*[F.lit(n) for n in names])


def _index(names, col) -> "F.Column":
    """1-based index of col in names (0 when absent or null)."""
    return F.coalesce(F.array_position(_lookup(names), col), F.lit(0)).cast("long")


def _name(names, idx: "F.Column") -> "F.Column":
    return F.when(idx > 0, F.element_at(_lookup(names), idx.cast("int")))


def produced_rk(cat: Catalog) -> "F.Column":
    return F.shiftleft(_index(cat.producers, F.col("producer")), SEQ_BITS) + F.col("seq")


def consumed_rk(cat: Catalog) -> "F.Column":
    """The rk a consumed record_id names: `<producer>-<seq>` exactly (no sign, no
    leading zero, a catalogued producer), else null (odd, or a foreign payload)."""
    rid = F.col("record_id")
    seq_text = F.substring_index(rid, "-", -1)
    prefix = F.expr("substring(record_id, 1, length(record_id) - "
                    "length(substring_index(record_id, '-', -1)) - 1)")
    seq = seq_text.try_cast("long")
    pidx = _index(cat.producers, prefix)
    exact = (pidx > 0) & (seq >= 0) & (seq <= MAX_SEQ) & (
        F.concat(prefix, F.lit("-"), seq.cast("string")) == rid)
    return F.when(exact, F.shiftleft(pidx, SEQ_BITS) + seq)


def record_id_of(rk: "F.Column", cat: Catalog) -> "F.Column":
    return F.concat(_name(cat.producers, F.shiftright(rk, SEQ_BITS)), F.lit("-"),
                    rk.bitwiseAND(MAX_SEQ).cast("string"))


def identity_check(produced: DataFrame, cat: Catalog) -> dict[str, int]:
    """Produced rows whose record_id is not `<producer>-<seq>` ("nonconforming"), and
    rows repeating another row's record ("repeated"), in one aggregation: seqs in
    blocks of 64, one bit each, so a block's rows outnumber its bits only where a
    seq repeats. Blocks of consecutive seqs combine before the shuffle."""
    seq = F.col("seq")
    bad = F.col("record_id") != F.concat(F.col("producer"), F.lit("-"), seq.cast("string"))
    per_block = produced.groupBy(_index(cat.producers, F.col("producer")).alias("p"),
                                 F.shiftright(seq, 6).alias("block")).agg(
        F.count(F.lit(1)).alias("n"),
        F.bit_or(F.expr("shiftleft(1L, cast(seq & 63 as int))")).alias("m"),
        F.sum(bad.cast("long")).alias("bad"))
    row = per_block.agg(F.sum(F.col("n") - F.bit_count("m")).alias("repeated"),
                        F.sum("bad").alias("nonconforming")).collect()[0]
    return {"repeated": int(row["repeated"] or 0), "nonconforming": int(row["nonconforming"] or 0)}


def _code(values, col: str) -> "F.Column":
    return F.coalesce(F.array_position(_lookup(values), F.col(col)), F.lit(0)).cast("int")


# The union's one int of flags. Produced: bit 0 set, bits 1-2 status, bit 3 in a
# transaction, bits 4-5 txn_outcome (both indexes 1-based), bits 8-30 the produced
# partition (topic id << 16 | partition, plus 1; 0 when null: the metrics' `tp` of a
# record without a position). Consumed: bit 1 drain, bit 2 run, bit 4 run with a
# group, bit 5 odd or foreign, bits 8.. group index.
def _union(produced: DataFrame, consumed: DataFrame, cat: Catalog) -> DataFrame:
    tp = F.when(F.col("partition").isNotNull(), F.shiftright(
        pack_position(cat.topics, cols=("topic", "partition", F.lit(0))), 40) + 1)
    p = produced.select(
        _union_key(cat).alias("k"), produced_rk(cat).alias("rk"),
        F.col("send_ts_us").alias("t1"), F.col("ack_ts_us").alias("t2"),
        (F.lit(1) + _code(STATUSES, "status") * 2 + F.col("txn_id").isNotNull().cast("int") * 8
         + _code(TXN_OUTCOMES, "txn_outcome") * 16
         + F.coalesce(tp, F.lit(0)).cast("int") * 256).alias("f"))
    run_group = (F.col("phase") == "run") & F.col("group_id").isNotNull()
    c_rk = consumed_rk(cat)
    c = consumed.select(
        pack_position(cat.topics).alias("k"), c_rk.alias("rk"), F.col("recv_ts_us").alias("t1"), F.lit(None).cast("long").alias("t2"),
        ((F.col("phase") == "drain").cast("int") * 2 + (F.col("phase") == "run").cast("int") * 4
         + run_group.cast("int") * 16 + c_rk.isNull().cast("int") * 32
         + F.when(run_group, _index(cat.groups, F.col("group_id")).cast("int") * 256)
         .otherwise(0)).alias("f"))
    return p.unionByName(c)


# Columns of the positions view written only on exceptional rows (null elsewhere).
EXCEPTIONAL_ONLY = ("n_p", "p_hi", "c_lo", "c_hi")


def _aggregate(produced: DataFrame, consumed: DataFrame, cat: Catalog) -> DataFrame:
    """One row per position (k >= 0) or position-less produced record (k = -rk)."""
    f, t1 = F.col("f"), F.col("t1")
    is_p = f.bitwiseAND(1) == 1
    is_c = ~is_p
    bit = lambda n: f.bitwiseAND(n) != 0  # noqa: E731
    when_c = lambda cond, v: F.when(is_c & cond, v)  # noqa: E731
    group_bit = F.expr("shiftleft(1L, shiftright(f, 8) - 1)")
    agg = _union(produced, consumed, cat).repartition("k").groupBy("k").agg(
        F.sum(is_p.cast("int")).alias("n_p"),
        F.min(F.when(is_p, F.col("rk"))).alias("rk"), F.max(F.when(is_p, F.col("rk"))).alias("p_hi"),
        F.max(F.when(is_p, f)).alias("pf"),
        F.max(F.when(is_p, t1)).alias("send_ts_us"), F.min(F.when(is_p, t1)).alias("_send_lo"),
        F.max("t2").alias("ack_ts_us"),
        F.min(F.when(is_c, F.col("rk"))).alias("c_lo"), F.max(F.when(is_c, F.col("rk"))).alias("c_hi"),
        F.max(when_c(bit(32), F.lit(True))).alias("_odd"),
        F.max(when_c(bit(2), F.lit(True))).alias("drained"),
        F.min(when_c(bit(4), t1)).alias("first_run_recv_us"),
        F.sum(when_c(bit(16), F.lit(1))).alias("_run_group_deliveries"),
        F.bit_or(when_c(bit(16), group_bit)).alias("group_mask"))
    k, rk, pf = F.col("k"), F.col("rk"), F.col("pf")
    clean = ((k >= 0) & (F.col("n_p") == 1) & F.col("_odd").isNull()
             & (F.col("c_lo") == rk) & (F.col("c_hi") == rk)
             # no group received it twice (redelivered is counted exactly elsewhere)
             & (F.coalesce(F.col("_run_group_deliveries"), F.lit(0))
                == F.bit_count(F.coalesce(F.col("group_mask"), F.lit(0))))
             # an acked record of an aborted transaction is a contradiction the
             # general path judges (aborted_read)
             & (F.shiftright(pf, 4).bitwiseAND(3) != 2))
    # never acked, so never lost; consumed anywhere, that position is exceptional
    loose = (k < 0) & (F.col("n_p") == 1) & (F.shiftright(pf, 1).bitwiseAND(3) != 1)
    exc = ~F.coalesce(clean | loose, F.lit(False))
    return agg.select(
        "k", "rk", "pf", "send_ts_us", "_send_lo", "ack_ts_us", "drained",
        "first_run_recv_us", "group_mask", exc.alias("exc"),
        *[F.when(exc, F.col(c)).alias(c) for c in EXCEPTIONAL_ONLY])


def _sizes() -> dict:
    exc = F.col("exc")
    return {"exceptional": F.sum(exc.cast("long")),
            "run_start_us": F.min("_send_lo"),
            "run_end_us": F.max(F.greatest("send_ts_us", "ack_ts_us"))}


def _ids(df: DataFrame, cols) -> DataFrame:
    """The distinct non-null values of cols, as one column `rk`."""
    return reduce(DataFrame.unionByName, [df.select(F.col(c).alias("rk")) for c in cols]) \
        .where(F.col("rk").isNotNull()).distinct()


def _union_key(cat: Catalog) -> "F.Column":
    """A produced row's key in the positions view (_union's k)."""
    placed = ((F.col("status") == "acked") & F.col("partition").isNotNull()
              & F.col("offset").isNotNull())
    return F.when(placed, pack_position(cat.topics)).otherwise(-produced_rk(cat))


def _fetch(table: DataFrame, key: "F.Column", keys: tuple[DataFrame, int]) -> DataFrame:
    """table's rows whose key (the positions view's k) is in `keys` (column k): one
    scan, the keys broadcast when few. (Matching record_id strings instead cost 4.4 and
    3.6 s at 10 M records; literal sets, a hash set in the generated code, 15 s.)"""
    return table.join(small(keys[0].select(F.col("k").alias("_k")), keys[1]),
                      key == F.col("_k"), "left_semi")


def _exceptional_rows(produced, consumed, positions, cat, materialize):
    """(produced rows, consumed rows, E as rk) of the exceptional positions and
    records: the rows at those positions, and every row of the records produced or
    seen there (E). A record of E was consumed only at exceptional positions and at
    its own key, so both tables are fetched by key. The view names two records per
    position, the lowest and the highest; a third is found among the rows fetched
    there, and its own key's rows are fetched then."""
    exc, seen = materialize("exceptions", positions.where(F.col("exc")).select(
        "k", "rk", *EXCEPTIONAL_ONLY), {"rows": F.count(F.lit(1))})
    ids, seen_ids = materialize("exceptional_ids", _ids(exc, ("rk", "p_hi", "c_lo", "c_hi")),
                                {"rows": F.count(F.lit(1))})
    ids = (ids, seen_ids["rows"])
    keys = _keys(exc.select("k").unionByName(_own_keys(positions, ids)), materialize,
                 "exceptional_keys")
    rows = _fetch_both(produced, consumed, keys, cat, materialize, "exceptional")
    more = reduce(DataFrame.unionByName, [
        rows[t].select(rk.alias("rk")) for t, rk in (("produced", produced_rk(cat)),
                                                    ("consumed", consumed_rk(cat)))])
    more, seen = materialize("exceptional_more", more.where(F.col("rk").isNotNull()).distinct()
                             .join(small(ids[0], ids[1]), "rk", "left_anti"),
                             {"rows": F.count(F.lit(1))})
    if seen["rows"]:
        # records beyond the view's two per position: their own keys' rows too
        more = (more, seen["rows"])
        extra = _keys(_own_keys(positions, more).join(small(*keys), "k", "left_anti"),
                      materialize, "exceptional_more_keys")
        extra = _fetch_both(produced, consumed, extra, cat, materialize, "exceptional_more")
        rows = {t: rows[t].unionByName(extra[t]) for t in rows}
        ids = (ids[0].unionByName(more[0]), ids[1] + more[1])
    return rows["produced"], rows["consumed"], ids


def _own_keys(positions: DataFrame, ids: tuple[DataFrame, int]) -> DataFrame:
    """The keys of the positions view's rows of the records `ids`."""
    return positions.join(small(ids[0], ids[1]), "rk", "left_semi").select("k")


def _keys(keys: DataFrame, materialize, name: str) -> tuple[DataFrame, int]:
    df, seen = materialize(name, keys.distinct(), {"rows": F.count(F.lit(1))})
    return df, seen["rows"]


def _fetch_both(produced, consumed, keys: tuple[DataFrame, int], cat: Catalog, materialize,
                name: str) -> dict[str, DataFrame]:
    return {"produced": materialize(f"{name}_produced", _fetch(
                produced, _union_key(cat), keys))[0],
            "consumed": materialize(f"{name}_consumed", _fetch(
                consumed, pack_position(cat.topics), keys))[0]}


def _clean(positions: DataFrame, ids: tuple[DataFrame, int]) -> DataFrame:
    """The positions view's rows complete in themselves: clean positions and
    position-less records, except those of exceptional records."""
    return positions.where(~F.col("exc")).join(
        small(ids[0], ids[1]), "rk", "left_anti")


def _missed(clean: DataFrame, commits: DataFrame, cat: Catalog) -> DataFrame:
    """Skipped-candidates at clean positions: the drain saw the record there, the
    group committed past it, and no run consumer of the group received it (its bit
    is not in the position's mask). The general path's groups columns, plus the
    drain's record there."""
    high = highest_commits(commits).select(
        "group_id", "topic", "partition", "committed_offset",
        F.shiftright(pack_position(cat.topics, cols=("topic", "partition", F.lit(0))), 40)
        .alias("h_tp"), _index(cat.groups, F.col("group_id")).alias("gbit"))
    missed = (clean.where((F.col("k") >= 0) & F.col("drained").isNotNull())
              .select("k", "rk", "group_mask")
              .join(F.broadcast(high.where(F.col("h_tp") >= 0)),
                    (F.shiftright(F.col("k"), 40) == F.col("h_tp"))
                    & (F.col("k").bitwiseAND(MAX_OFFSET) < F.col("committed_offset")))
              .where((F.col("gbit") == 0)
                     | (F.expr("shiftright(coalesce(group_mask, 0L), gbit - 1) & 1") == 0)))
    return missed.select("group_id", "topic", "partition",
                         F.col("k").bitwiseAND(MAX_OFFSET).alias("offset"),
                         F.lit(0).cast("long").alias("deliveries"), "committed_offset",
                         record_id_of(F.col("rk"), cat).alias("drain_record_id"))


def _clean_metric_inputs(clean: DataFrame) -> DataFrame:
    """metrics.metric_inputs' columns of the clean rows: tp = topic id << 32 |
    partition (metrics.tp_key), from the position, or a position-less record's
    produced partition (_union's flags)."""
    tp = F.when(F.col("k") >= 0, F.shiftright("k", 40)).otherwise(
        F.shiftright("pf", 8).cast("long") - 1)
    return clean.select(
        F.lit(True).alias("sent"),
        F.coalesce(F.shiftright("pf", 1).bitwiseAND(3) == 1, F.lit(False)).alias("acked"),
        "send_ts_us", "ack_ts_us", "first_run_recv_us",
        F.when(tp >= 0, F.shiftright(tp, 16) * (1 << 32) + tp.bitwiseAND(MAX_PARTITION))
        .alias("tp"))


def build_views(produced: DataFrame, consumed: DataFrame, commits: DataFrame, cat: Catalog,
                materialize, on_metric_inputs=None, trusted=lambda: True) -> Views | None:
    """The general path's views for the exceptional rows, with the clean positions'
    skipped-candidates in `groups`, and `ready` inputs for the anomaly frames; None
    when trusted() (asked once the positions view is written: identity_check's
    verdict) says the records cannot be named by rk. on_metric_inputs(inputs, sizes)
    is called as soon as the metric inputs of every record (both halves) can be read."""
    raw = _aggregate(produced, consumed, cat)
    positions, sizes = materialize("positions", raw, _sizes(),
                                   keep=[c for c in raw.columns if c != "_send_lo"])
    if not trusted():
        return None
    p_rows, c_rows, ids = _exceptional_rows(produced, consumed, positions, cat, materialize)
    exc = general_views(p_rows, c_rows, commits, cat.topics,
                        lambda name, df, observe=None, keep=None:
                        materialize(f"exceptional_{name}", df, observe, keep))
    clean = _clean(positions, ids)
    if on_metric_inputs is not None:
        on_metric_inputs(_clean_metric_inputs(clean).unionByName(
            metric_inputs(exc.records.where(F.col("producer").isNotNull()), cat.topics)),
            dict(sizes))
    n = {**exc.sizes, **sizes}
    missed, seen = materialize("missed_clean", _missed(clean, commits, cat),
                               {"rows": F.count(F.lit(1))})
    n["missed"] = n["missed"] + seen["rows"]
    groups = exc.groups.withColumn("drain_record_id", F.lit(None).cast("string")) \
        .unionByName(missed)
    r = exc.records
    divergent_at = exc.offsets.where(DIVERGENT()).select(*OFFSET)
    candidates, n_candidates = overwrite_candidates(r, n, divergent_at, materialize)
    return Views(r, exc.offsets, groups, n, Keyed(c_rows, candidates, n_candidates),
                 ready={"duplicates": r.where(F.col("n_positions") >= 2),
                        "aborted": r.where(F.col("txn_outcome") == "aborted"),
                        "flagged": r.where(FLAGGED()),
                        "reordered": _reordered(clean, r, cat, materialize)})


def _reordered(clean: DataFrame, exc_records: DataFrame, cat: Catalog,
               materialize) -> DataFrame:
    """The general path's rule (a record below the highest offset of any earlier seq of
    its producer on its partition) over both halves. Only three numbers are sorted,
    (producer index, partition key) as one, seq and offset, and the few rows found
    are matched back on all three: carrying names through the sort took 19 s
    against 10 s at 10 M records."""
    def numbered(df, pidx, pk, seq):
        return df.select("*", (pidx * (1 << 23) + F.shiftright(pk, 40)).alias("_g"),
                         seq.alias("_s"), pk.bitwiseAND(MAX_OFFSET).alias("_o"))
    fast = numbered(clean.where(F.col("k") >= 0), F.shiftright("rk", SEQ_BITS), F.col("k"),
                    F.col("rk").bitwiseAND(MAX_SEQ))
    slow = numbered(exc_records.where(F.col("producer").isNotNull()
                                      & F.col("n_positions").isNotNull()),
                    _index(cat.producers, F.col("producer")),
                    pack_position(cat.topics, cols=("pos_topic", "pos_partition", "pos_offset")),
                    F.col("seq"))
    rows = fast.select("_g", "_s", "_o").unionByName(slow.select("_g", "_s", "_o"))
    earlier = (Window.partitionBy("_g").orderBy("_s")
               .rowsBetween(Window.unboundedPreceding, -1))
    # The window sorts each partition by (_g, _s): _g is the sort's prefix, so nearly
    # every comparison reads both rows. Sorting by one long first (_g, then seq
    # clamped to 31 bits) lets Spark radix-sort, and TimSort then finds the rows
    # already in order. The hint only orders; the window's own sort stays the rule.
    hint = F.col("_g") * (1 << 31) + F.least(F.greatest("_s", F.lit(0)), F.lit((1 << 31) - 1))
    presorted = rows.repartition("_g").sortWithinPartitions(hint)
    found, seen = materialize("reordered", presorted
                              .withColumn("earlier_max_offset", F.max("_o").over(earlier))
                              .where(F.col("_o") < F.col("earlier_max_offset")),
                              {"rows": F.count(F.lit(1))})
    hits = small(found, seen["rows"])
    topic, partition, offset = unpack_position(F.col("k"), cat.topics)
    fast_hits = fast.join(hits, ["_g", "_s", "_o"]).select(
        record_id_of(F.col("rk"), cat).alias("record_id"),
        _name(cat.producers, F.shiftright("rk", SEQ_BITS)).alias("producer"),
        F.col("_s").alias("seq"), F.lit("acked").alias("status"),
        topic.alias("pos_topic"), partition.alias("pos_partition"), offset.alias("pos_offset"),
        F.col("drained").isNotNull().alias("pos_from_drain"), "earlier_max_offset")
    slow_hits = slow.join(hits, ["_g", "_s", "_o"]).select(*REORDERED_COLS)
    return fast_hits.unionByName(slow_hits)
