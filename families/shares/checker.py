"""The share-group family's checker: its six kinds over `share_deliveries`
(docs/history.md, "share_deliveries"), one function each.

A position is (group_id, topic, partition, offset). Every kind reads one frame of the
deliveries with, per position, the number of deliveries, the earliest accept the
broker confirmed (`ok`), and each delivery's predecessor in receive order
(`deliveries`, computed once). The groups' parameters (record lock, delivery count
limit, topics) and when each member instance was gone come from the run's events
(`share-group-config`, written when the group's configs were set and read back, and
the members' start/close/kill events): a stored run is judged by what its brokers
said, not by today's defaults.

Each row carries `explain_at_us`, the moment it is about (the delivery; for
share_lost the record's ack), from which the explainer finds the fault, the elected
leader and the faults active (spark_reports/anomaly_output.py).
"""
from __future__ import annotations

import json
from dataclasses import dataclass

from pyspark.sql import DataFrame, Window
from pyspark.sql import functions as F

from families.records.checker import Inputs
from families.records.views import PRODUCED_COLS

POSITION = ("group_id", "topic", "partition", "offset")
GONE_EVENTS = ("share-member-kill", "share-member-close", "share-member-exit", "workload-died")
DELIVERY_COLS = ("group_id", "consumer", "topic", "partition", "offset", "record_id",
                 "delivery_count", "recv_ts_us", "ack", "ack_result", "ack_error")


@dataclass(frozen=True)
class GroupParams:
    lock_ms: int
    limit: int
    topics: tuple[str, ...]


def group_params(events: list[dict]) -> dict[str, GroupParams]:
    """group -> its parameters, from its last `share-group-config` event."""
    out = {}
    for e in events:
        if e.get("name") == "share-group-config":
            d = json.loads(e.get("detail") or "{}")
            out[d["group_id"]] = GroupParams(int(d["lock_ms"]), int(d["delivery_count_limit"]),
                                             tuple(d.get("topics") or ()))
    return out


def gone_times(events: list[dict]) -> dict[tuple[str, str], int]:
    """(group, member instance) -> when it was first gone (killed, closed, exited)."""
    out: dict[tuple[str, str], int] = {}
    for e in sorted(events, key=lambda e: e["ts_us"]):
        if e.get("kind") == "client" and e.get("name") in GONE_EVENTS and e.get("target"):
            d = json.loads(e.get("detail") or "{}")
            if "group_id" in d:
                out.setdefault((d["group_id"], e["target"]), e["ts_us"])
    return out


def _map(values: dict, value_type: str) -> F.Column:
    if not values:
        return F.create_map().cast(f"map<string,{value_type}>")
    return F.create_map(*[F.lit(x) for kv in values.items() for x in kv])


class ShareFrames:
    """The deliveries with their per-position columns, built once per verify."""

    def __init__(self, x: Inputs):
        self.x = x
        self.params = group_params(x.events)
        self.gone = gone_times(x.events)
        d = x.tables["share_deliveries"]
        lock = _map({g: p.lock_ms * 1000 for g, p in self.params.items()}, "bigint")
        limit = _map({g: p.limit for g, p in self.params.items()}, "int")
        gone = _map({f"{g}\t{m}": t for (g, m), t in self.gone.items()}, "bigint")
        pos = Window.partitionBy(*POSITION)
        order = pos.orderBy("recv_ts_us", "consumer")
        ok_accept = (F.col("ack") == "accept") & (F.col("ack_result") == "ok")
        first_ok = _first_decided(ok_accept, pos)
        ok_reject = (F.col("ack") == "reject") & (F.col("ack_result") == "ok")
        prev = F.lag(F.struct(*[F.col(c).alias(c) for c in (
            "consumer", "recv_ts_us", "ack", "ack_ts_us", "ack_result")]), 1).over(order)
        self.deliveries = (d.select(*DELIVERY_COLS, F.col("ack_ts_us").alias("decided_us"),
                                    F.col("ack_ts_us"))
                           .withColumns({
                               "lock_us": F.coalesce(lock[F.col("group_id")], F.lit(30_000_000).cast("bigint")),
                               "limit": limit[F.col("group_id")],
                               "deliveries": F.count(F.lit(1)).over(pos),
                               "accepts_ok": F.sum(ok_accept.cast("int")).over(pos),
                               "first_accept": first_ok,
                               "first_reject": _first_decided(ok_reject, pos),
                               "nth": F.row_number().over(order),
                               "prev": prev})
                           .withColumn("prev_gone_us", gone[F.concat_ws(
                               "\t", F.col("group_id"), F.col("prev.consumer"))]))
        self.gone_col = gone

    def rows(self, df: DataFrame, *extra) -> DataFrame:
        return df.select(*DELIVERY_COLS, "decided_us", F.col("recv_ts_us").alias("explain_at_us"),
                         F.col("recv_ts_us").alias("first_recv_us"), *extra)


def _first_decided(decided: F.Column, pos: Window) -> F.Column:
    """The earliest delivery of the position with this decision answered ok: when, by whom,
    with which delivery count (null when none)."""
    return F.min(F.when(decided, F.struct(
        F.col("ack_ts_us").alias("at"), F.col("consumer").alias("by"),
        F.col("delivery_count").alias("count")))).over(pos)


def _frames(x: Inputs) -> ShareFrames:
    return x.once("share", ShareFrames)


def share_double_accept(x: Inputs) -> DataFrame:
    """Every delivery of a position that two deliveries accepted with `ok`."""
    s = _frames(x)
    return s.rows(s.deliveries.where(F.col("accepts_ok") >= 2), "accepts_ok")


def _redelivered_after(x: Inputs, first: str, decided: str) -> DataFrame:
    """A delivery that began after the position's `first` decision (first_accept or
    first_reject, answered `ok`), with who decided it, when, and at which delivery."""
    s = _frames(x)
    return s.rows(s.deliveries.where(F.col("recv_ts_us") > F.col(f"{first}.at")),
                  F.col(f"{first}.by").alias(f"{decided}_by"),
                  F.col(f"{first}.at").alias(f"{decided}_at_us"),
                  F.col(f"{first}.count").alias(f"{decided}_delivery_count"))


def share_redelivered_after_accept(x: Inputs) -> DataFrame:
    """A delivery that began after an earlier delivery of its position was accepted
    with `ok` (the member's decision time: conservative, see docs/history.md)."""
    return _redelivered_after(x, "first_accept", "accepted")


def share_redelivered_after_reject(x: Inputs) -> DataFrame:
    """A delivery that began after an earlier delivery of its position was rejected
    with `ok`: KIP-932 archives a rejected record; it is never delivered again."""
    return _redelivered_after(x, "first_reject", "rejected")


def share_over_limit(x: Inputs) -> DataFrame:
    """A delivery whose delivery_count exceeds its group's delivery count limit."""
    s = _frames(x)
    return s.rows(s.deliveries.where(F.col("delivery_count") > F.col("limit")), "limit")


def share_redelivered(x: Inputs) -> DataFrame:
    """The 2nd … k-th deliveries of a position, each with why it came back (`cause`)."""
    s = _frames(x)
    p = F.col("prev")
    gap = F.col("recv_ts_us") - p["recv_ts_us"]
    cause = (F.when((p["ack"] == "release") & (p["ack_result"] == "ok"), "release")
             .when((p["ack"] == "accept") & (p["ack_result"] == "ok"), "after-accept")
             .when((p["ack"] == "reject") & (p["ack_result"] == "ok"), "after-reject")
             .when(p["ack"].isNotNull() & (p["ack_result"] != "ok"), "ack-failed")
             .when(F.col("prev_gone_us").isNotNull()
                   & (F.col("prev_gone_us") <= F.col("recv_ts_us")), "member-gone")
             .when(p["ack"].isNull() & (gap >= F.col("lock_us")), "lock-expired")
             .when(p["ack"].isNull() & (p["consumer"] == F.col("consumer")), "same-member")
             .otherwise("unexplained"))
    return s.rows(s.deliveries.where(F.col("nth") > 1),
                  p["consumer"].alias("previous_consumer"), p["ack"].alias("previous_ack"),
                  p["ack_result"].alias("previous_ack_result"),
                  (gap / 1000).alias("gap_ms"), cause.alias("cause"))


def share_concurrent(x: Inputs) -> DataFrame:
    """A delivery of a position to one member while another still held it: its
    delivery began less than the lock earlier, and it had neither decided nor gone."""
    s = _frames(x)
    multi = s.deliveries.where(F.col("deliveries") > 1)
    d1 = multi.select(*[F.col(c).alias(f"h_{c}") for c in (*POSITION, "consumer", "recv_ts_us",
                                                           "ack_ts_us")])
    joined = multi.join(d1, [F.col(c) == F.col(f"h_{c}") for c in POSITION]).where(
        (F.col("h_consumer") != F.col("consumer"))
        & (F.col("h_recv_ts_us") <= F.col("recv_ts_us"))
        & (F.col("recv_ts_us") < F.col("h_recv_ts_us") + F.col("lock_us"))
        & (F.col("h_ack_ts_us").isNull() | (F.col("h_ack_ts_us") > F.col("recv_ts_us"))))
    gone = s.gone_col[F.concat_ws("\t", F.col("group_id"), F.col("h_consumer"))]
    joined = joined.where(gone.isNull() | (gone > F.col("recv_ts_us")))
    return s.rows(joined, F.col("h_consumer").alias("held_by"),
                  ((F.col("recv_ts_us") - F.col("h_recv_ts_us")) / 1000).alias("held_for_ms"))


def share_lost(x: Inputs) -> DataFrame:
    """An `acked` record of a topic a share group consumes whose position no delivery
    accepted or rejected with `ok`, that was not archived (a reported delivery_count
    reaching the limit; without counts, as many deliveries as the limit), and whose
    last delivery was not an accept or reject of unknown outcome (it may have been
    applied: counted apart, as share_unresolved in the metrics)."""
    s = _frames(x)
    if not s.params:
        return x.views.records.limit(0).select(*PRODUCED_COLS, F.lit(None).cast("string").alias("group_id"))
    d = s.deliveries
    done = ((F.col("ack").isin("accept", "reject")) & (F.col("ack_result") == "ok")).cast("int")
    last_unknown = (F.col("ack").isin("accept", "reject") & (F.col("ack_result") == "unknown")
                    & (F.col("nth") == F.col("deliveries"))).cast("int")
    resolved = (d.groupBy(*POSITION).agg(
        F.max(done).alias("done"), F.max(last_unknown).alias("last_unknown"),
        F.max("delivery_count").alias("max_count"), F.count(F.lit(1)).alias("n"),
        F.first("limit").alias("limit"), F.max_by("consumer", "recv_ts_us").alias("last_consumer"),
        F.max_by("ack", "recv_ts_us").alias("last_ack"),
        F.max_by("ack_result", "recv_ts_us").alias("last_ack_result")))
    subscribed = x.views.records.sparkSession.createDataFrame(
        [(g, t) for g, p in s.params.items() for t in p.topics], "group_id string, topic string")
    acked = (x.views.records.where(F.col("status") == "acked")
             .join(F.broadcast(subscribed), "topic")
             .select(*PRODUCED_COLS, "group_id",
                     F.coalesce("pos_topic", "topic").alias("pos_topic"),
                     F.coalesce("pos_partition", "partition").alias("pos_partition"),
                     F.coalesce("pos_offset", "offset").alias("pos_offset")))
    on = [acked["group_id"] == resolved["group_id"], acked["pos_topic"] == resolved["topic"],
          acked["pos_partition"] == resolved["partition"], acked["pos_offset"] == resolved["offset"]]
    joined = acked.join(resolved, on, "left")
    archived = F.coalesce(F.col("max_count") >= F.col("limit"),
                          F.col("n") >= F.col("limit"), F.lit(False))
    return (joined.where(F.coalesce(F.col("done"), F.lit(0)) == 0)
            .where(~archived & (F.coalesce(F.col("last_unknown"), F.lit(0)) == 0))
            .select(*[acked[c] for c in PRODUCED_COLS], acked["group_id"],
                    F.coalesce(F.col("n"), F.lit(0)).alias("deliveries"), "last_consumer",
                    "last_ack", "last_ack_result", F.col("max_count").alias("max_delivery_count")))
