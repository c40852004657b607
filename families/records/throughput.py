"""The records family's latency, throughput and lag metrics, from one scan of the
records view into histograms (histograms()).

Percentiles are nearest-rank over exact counts in log buckets 0.1 % wide (see
FINE), so only a few thousand bucket rows reach the driver. Readings chosen here:

- ack latency: ack_ts_us − send_ts_us of `acked` records.
- end-to-end latency: first receipt by any `run` consumer − send_ts_us (the
  drain reads after the faults, so it would only measure the drain).
- "inside a fault window": records *sent* between the fault and its heal.
- throughput per second: records sent, acked (by ack time) and consumed in
  `run` (by receive time), per whole second since the epoch.
- consumer lag per group and second (consumer_lag).

The same histograms feed availability.py (unavailability, touched partitions).
"""
from __future__ import annotations

import math
from collections import defaultdict
from functools import reduce

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from core.timeline import Timeline

PCTS = (("p50", 0.5), ("p99", 0.99), ("p999", 0.999))
# Latency histograms: log buckets 0.1 % wide (each bucket also keeps its exact min
# and max, so a percentile is off by at most half a bucket, and max is exact).
# Counting into fixed buckets is a plain hash aggregation: far cheaper in Spark
# than percentile_approx, and exact counts make the percentiles reproducible.
FINE, COARSE = 1.001, 1.05


def metric_inputs(records: DataFrame, topics: list[str]) -> DataFrame:
    """The columns the metrics read, from a records view (views.build_views):
    `sent` (a produced row), `acked` (status acked), the three timestamps, and the
    produced partition as one number, `tp` (tp_key; null when the partition is)."""
    tp = F.when(F.col("partition").isNotNull(), (F.coalesce(
        F.array_position(F.array(*[F.lit(t) for t in topics]), F.col("topic")), F.lit(0)) - 1)
        * (1 << 32) + F.col("partition"))
    return records.select(F.col("producer").isNotNull().alias("sent"),
                          F.coalesce(F.col("status") == "acked", F.lit(False)).alias("acked"),
                          "send_ts_us", "ack_ts_us", "first_run_recv_us", tp.alias("tp"))


def tp_key(topics: list[str], topic: str, partition: int) -> int:
    """metric_inputs' `tp` of a partition (topics: the history's, sorted)."""
    return topics.index(topic) * (1 << 32) + partition


def ACK_MS():
    return F.when(F.col("acked") & F.col("ack_ts_us").isNotNull(),
                  (F.col("ack_ts_us") - F.col("send_ts_us")) / 1000.0)


def E2E_MS():
    return F.when(F.col("first_run_recv_us").isNotNull() & F.col("send_ts_us").isNotNull(),
                  (F.col("first_run_recv_us") - F.col("send_ts_us")) / 1000.0)


def _bucket(ms, base: float):
    return F.when(ms <= 0.001, F.lit(-1)).otherwise(
        F.floor(F.log(ms / 0.001) / math.log(base))).cast("int")


def percentiles(buckets: list[tuple[int, int, float, float]]) -> dict:
    """Nearest-rank p50/p99/p99.9 and max from (bucket, n, lo, hi) rows."""
    buckets = sorted(buckets)
    n = sum(b[1] for b in buckets)
    if not n:
        return {"p50": None, "p99": None, "p999": None, "max": None, "n": 0}
    out: dict = {"n": n, "max": round(float(buckets[-1][3]), 3)}
    for name, q in PCTS:
        rank, seen = max(1, math.ceil(q * n)), 0
        for _, cnt, lo, hi in buckets:
            seen += cnt
            if seen >= rank:
                out[name] = round((lo + hi) / 2, 3)
                break
    return {k: out[k] for k in ("p50", "p99", "p999", "max", "n")}


PLAIN_TESTS_MAX = 64     # fault windows tested as plain expressions first (histograms)
HIST_KINDS = ("ack", "e2e", "sent", "ack_s", "fault_ack", "fault_e2e", "ack_slot", "fault_sent",
              "acked_topic_s", "fault_acked")


def histograms(records: DataFrame, tl: Timeline | None = None,
               threshold_us: int | None = None) -> dict[str, list]:
    """One scan of metric_inputs for every metric: kind -> [(key, bucket, topic,
    partition, n, lo, hi)].

    - "ack", "e2e": run-wide latency (FINE buckets; key None);
    - "sent": sends per second (key = second); "ack_s": ack latency per second acked
      (key = second, COARSE buckets);
    - "fault_ack", "fault_e2e": latency of the records sent inside a fault window
      (key = the fault's index in tl.faults);
    - "ack_slot" (with threshold_us): first and last ack (lo, hi) per threshold-wide
      slot (key = ack_ts_us // threshold_us) and partition (bucket = tp), for
      unavailability;
    - "fault_sent": sends inside a fault window per partition (key = the fault's
      index, bucket = tp), for the partitions written while it was active;
    - "acked_topic_s": acks per second (key) and topic (bucket = tp >> 32), for
      consumer lag;
    - "fault_acked": records sent while a fault was wholly in effect (from the end of
      its inject) and acknowledged before its heal, per partition (key = the fault's
      index, bucket = tp), for acked_during.

    Kinds are numbers in the aggregation: a string key cost 3 of 10 s at 10 M."""
    items = F.array(*_record_items(threshold_us))
    extra, near = _fault_items(tl.faults if tl is not None else [])
    if extra is not None:
        # the windows' higher-order functions are interpreted: only for rows near one
        items = (F.concat(items, extra) if near is None
                 else F.when(near, F.concat(items, extra)).otherwise(items))
    rows = (records.select(F.explode(items).alias("x")).where(F.col("x").isNotNull())
            .select("x.*").groupBy("k", "s", "b")
            .agg(F.count(F.lit(1)).alias("n"), F.min("v").alias("lo"), F.max("v").alias("hi"))
            .collect())
    out: dict[str, list] = defaultdict(list)
    for r in rows:
        out[HIST_KINDS[r["k"]]].append((r["s"], r["b"], r["n"], r["lo"], r["hi"]))
    return out


def _item(kind, key, bucket, value) -> F.Column:
    return F.struct(F.lit(HIST_KINDS.index(kind)).alias("k"), key.cast("long").alias("s"),
                    bucket.cast("long").alias("b"), value.cast("double").alias("v"))


def _second(c: str) -> F.Column:
    return F.floor(F.col(c) / 1_000_000).cast("long")


def _record_items(threshold_us: int | None) -> list:
    """histograms()' items every record may give, whatever the faults."""
    ack, e2e, none = ACK_MS(), E2E_MS(), F.lit(None).cast("long")
    ack_ts, tp = F.col("ack_ts_us"), F.col("tp")
    attributed_ack = F.col("sent") & F.col("acked") & ack_ts.isNotNull() & tp.isNotNull()
    items = [
        F.when(ack.isNotNull(), _item("ack", none, _bucket(ack, FINE), ack)),
        F.when(e2e.isNotNull(), _item("e2e", none, _bucket(e2e, FINE), e2e)),
        F.when(F.col("sent"), _item("sent", _second("send_ts_us"), F.lit(0), F.lit(0))),
        F.when(ack.isNotNull(), _item("ack_s", _second("ack_ts_us"), _bucket(ack, COARSE), ack)),
        F.when(attributed_ack, _item("acked_topic_s", _second("ack_ts_us"),
                                     F.shiftright(tp, 32), F.lit(0)))]
    if threshold_us:
        # ack_ts_us is below 2^53: exact as a double
        items.append(F.when(attributed_ack, _item(
            "ack_slot", F.floor(ack_ts / threshold_us), tp, ack_ts)))
    return items


def _fault_items(faults: list) -> tuple:
    """(items of the records sent inside each fault window, a plain test of "inside
    some window" or None). The fault windows are higher-order functions over a
    literal array, which Spark interprets row by row; the plain test first keeps
    the rows no window concerns away from them. One plain expression per fault
    instead made the generated method too big to JIT-compile."""
    # a fault that was not injected has no window (core.timeline.Timeline.owner)
    live = [(i, f) for i, f in enumerate(faults) if not f.not_injected]
    if not live:
        return None, None
    ack, e2e, tp, send = ACK_MS(), E2E_MS(), F.col("tp"), F.col("send_ts_us")
    windows = F.array(*[F.struct(F.lit(i).alias("i"), F.lit(f.start_us).alias("a"),
                                 F.lit(f.end_us).alias("z"), F.lit(f.applied_us).alias("d"))
                        for i, f in live])
    near = None
    if len(live) <= PLAIN_TESTS_MAX:
        near = F.col("sent") & reduce(lambda a, b: a | b, [
            (send >= f.start_us) & (send <= f.end_us) for _, f in live])
    inside = F.filter(windows, lambda w: F.col("sent") & (send >= w["a"]) & (send <= w["z"]))
    return F.flatten(F.transform(inside, lambda w: F.array(
        F.when(ack.isNotNull(), _item("fault_ack", w["i"], _bucket(ack, FINE), ack)),
        F.when(e2e.isNotNull(), _item("fault_e2e", w["i"], _bucket(e2e, FINE), e2e)),
        F.when(tp.isNotNull(), _item("fault_sent", w["i"], tp, F.lit(0))),
        F.when(F.col("acked") & tp.isNotNull() & (send >= w["d"]) & (F.col("ack_ts_us") <= w["z"]),
               _item("fault_acked", w["i"], tp, F.lit(0)))))), near


def latencies(hist: dict[str, list]) -> dict:
    """Run-wide ack and end-to-end latency percentiles, from histograms()."""
    return {f"{k}_latency_ms": percentiles([(b, n, lo, hi) for _, b, n, lo, hi in hist[k]])
            for k in ("ack", "e2e")}


def fault_latencies(hist: dict[str, list], tl: Timeline) -> dict[str, dict]:
    """Ack and end-to-end latency of the records sent inside each fault window, from
    histograms(records, tl)."""
    by = defaultdict(list)
    for kind in ("fault_ack", "fault_e2e"):
        for i, b, n, lo, hi in hist[kind]:
            by[(i, kind)].append((b, n, lo, hi))
    return {f.fault_id: {"ack_latency_ms": percentiles(by[(i, "fault_ack")]),
                         "e2e_latency_ms": percentiles(by[(i, "fault_e2e")])}
            for i, f in enumerate(tl.faults)}


def acked_during(hist: dict[str, list], tl: Timeline, touched: dict, topics: list[str]) -> list[int]:
    """Per fault: the records sent on its touched partitions while it was wholly in
    effect (from the end of its inject: two followers are killed one after the other,
    and acks go on between the kills) and acknowledged before its heal (claim 5: with
    fewer in-sync replicas than min ISR, acks=all acknowledges nothing there until a
    follower returns)."""
    keys = {i: {tp_key(topics, t, p) for t, p in touched[i][0]} for i in range(len(tl.faults))}
    counts = [0] * len(tl.faults)
    for i, tp, n, _, _ in hist["fault_acked"]:
        if tp in keys.get(i, ()):
            counts[i] += n
    return counts


def per_second(hist: dict[str, list], consumed: DataFrame) -> list[dict]:
    """Sent / acked / consumed-in-run counts and ack latency per second (for the plots),
    from histograms() and one scan of consumed."""
    cons = (consumed.where(F.col("phase") == "run").groupBy(_second("recv_ts_us").alias("s"))
            .agg(F.count(F.lit(1)).alias("consumed")).collect())
    table: dict[int, dict] = defaultdict(lambda: {"sent": 0, "acked": 0, "consumed": 0,
                                                  "ack_p50_ms": None, "ack_p99_ms": None,
                                                  "ack_max_ms": None})
    for s_, _, n, _, _ in hist["sent"]:
        table[s_]["sent"] = int(n)
    acked = defaultdict(list)
    for s_, b, n, lo, hi in hist["ack_s"]:
        acked[s_].append((b, n, lo, hi))
    for s_, rows in acked.items():
        p = percentiles(rows)
        t = table[s_]
        t["acked"], t["ack_p50_ms"], t["ack_p99_ms"], t["ack_max_ms"] = (
            p["n"], p["p50"], p["p99"], p["max"])
    for r in cons:
        table[r["s"]]["consumed"] = int(r["consumed"])
    return [{"second": s_, **table[s_]} for s_ in sorted(table)]


def consumer_lag(hist: dict[str, list], groups: DataFrame, topics: list[str]) -> list[dict]:
    """Consumer lag per second per group (the spec): records acked by the end of that
    second, on the topics the group read, and not yet delivered to the group by
    then (a position counts as delivered from its first `run` delivery), from
    histograms()' "acked_topic_s" and the groups view. Never below 0 (a group may
    read records that were never acked)."""
    firsts = (groups.where(F.col("deliveries") > 0)
              .groupBy("group_id", "topic",
                       F.floor(F.col("first_recv_us") / 1_000_000).cast("long").alias("s"))
              .agg(F.count(F.lit(1)).alias("n")).collect())
    acked: dict[str, dict[int, int]] = defaultdict(lambda: defaultdict(int))
    for s_, t, n, _, _ in hist["acked_topic_s"]:
        acked[topics[t]][s_] += int(n)
    delivered: dict[str, dict[int, int]] = defaultdict(lambda: defaultdict(int))
    read: dict[str, set] = defaultdict(set)
    for r in firsts:
        delivered[r["group_id"]][r["s"]] += int(r["n"])
        read[r["group_id"]].add(r["topic"])
    out = []
    for g in sorted(delivered):
        per_s: dict[int, int] = defaultdict(int)
        for t in read[g]:
            for s_, n in acked.get(t, {}).items():
                per_s[s_] += n
        for s_, n in delivered[g].items():
            per_s[s_] -= n
        series, stall = _lag_series(per_s, delivered[g])
        out.append({"group_id": g, "per_second": series, "longest_stall_s": stall})
    return out


def _lag_series(change: dict[int, int], delivered: dict[int, int]) -> tuple[list[dict], int]:
    """The lag at the end of each second from its changes, and the group's longest
    stall: the most consecutive seconds in which records were waiting (lag above 0
    when the second began) and the group received no new position (claim 12: a
    rebalance's stop-the-world shows up here; a re-read of old positions does not
    end a stall)."""
    total, series, stall, longest = 0, [], 0, 0
    for s_ in range(min(change), max(change) + 1):
        waiting = total > 0
        total += change.get(s_, 0)
        series.append({"second": s_, "lag": max(total, 0)})
        stall = stall + 1 if waiting and not delivered.get(s_) else 0
        longest = max(longest, stall)
    return series, longest
