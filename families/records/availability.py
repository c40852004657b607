"""The records family's availability metrics: unavailability windows per partition,
the partitions each fault touched, and each fault's recovery.

- unavailability window of a partition (the spec): between two consecutive
  successful acks on it (or after its last) longer than the threshold, while
  at least one record on that partition was pending (sent before the window's
  end and not resolved by its start; a record is resolved at its ack_ts_us,
  failures included, and never when ack_ts_us is null). The window starts at
  the later of the previous ack and the first such send. Time before the
  partition's first successful ack is client start-up: no window. Records with
  a null partition cannot be attributed and are left out.
- touched partitions and recovery of a fault: the spec's definitions
  (touched_by_fault, recovery).

The acks come from throughput.histograms()' "ack_slot" rows, the writes during each
fault from its "fault_sent" rows.
"""
from __future__ import annotations

from collections import defaultdict

from pyspark.sql import DataFrame
from pyspark.sql import functions as F
from pyspark.sql import types as T

from core.timeline import Timeline, controller_failover, touched_partitions
from families.records.throughput import tp_key

DEFAULT_UNAVAILABILITY_THRESHOLD_S = 1.0


def unavailability(spark, records: DataFrame, threshold_s: float, run_end_us: int | None,
                   hist: dict[str, list], partitions: list[tuple[str, int]],
                   topics: list[str]) -> list[dict]:
    """Unavailability windows (module docstring) from histograms(records, tl,
    threshold_us)'s "ack_slot" rows; `partitions`: every produced (topic, partition),
    `topics`: the history's, sorted (tp_key)."""
    if run_end_us is None:
        return []
    thr = int(threshold_s * 1_000_000)
    attributed = records.where(F.col("sent") & F.col("tp").isNotNull())
    # Acks bucketed by threshold-wide slots: a gap longer than the threshold can
    # only lie between two non-empty slots, so the slots' first/last acks find every
    # gap exactly while only (partitions × run length / threshold) rows reach the driver.
    by_part: dict[int, list] = defaultdict(list)
    for _, tp, _, lo, hi in hist["ack_slot"]:
        by_part[tp].append((int(lo), int(hi)))
    parts = partitions
    gaps = []   # (gap_id, topic, partition, a, b, ended_by_ack)
    for tp in parts:
        acks = sorted(by_part.get(tp_key(topics, *tp), []))
        prev = None     # before the first ack: client start-up, not unavailability
        for lo, hi in acks:
            if prev is not None and lo - prev > thr:
                gaps.append((len(gaps), tp[0], tp[1], prev, lo, True))
            prev = hi
        if prev is not None and run_end_us - prev > thr:
            gaps.append((len(gaps), tp[0], tp[1], prev, run_end_us, False))
    if not gaps:
        return []
    gdf = spark.createDataFrame(
        [(g[0], tp_key(topics, g[1], g[2]), *g[3:]) for g in gaps], T.StructType([
            T.StructField("gap_id", T.LongType()), T.StructField("g_tp", T.LongType()),
            T.StructField("a", T.LongType()), T.StructField("b", T.LongType()),
            T.StructField("ended_by_ack", T.BooleanType())]))
    resolved = F.coalesce(F.col("ack_ts_us"), F.lit(run_end_us + 1))
    pending = (attributed.join(F.broadcast(gdf), F.col("tp") == F.col("g_tp"))
               .where((F.col("send_ts_us") < F.col("b")) & (resolved > F.col("a")))
               .groupBy("gap_id")
               .agg(F.min("send_ts_us").alias("first_send"),
                    F.max(F.least(resolved, F.lit(run_end_us))).alias("last_resolved"))
               .collect())
    by_gap = {r["gap_id"]: r for r in pending}
    out = []
    for gid, topic, part, a, b, ended in gaps:
        r = by_gap.get(gid)
        if r is None:
            continue
        start = max(a, r["first_send"])
        end = b if ended else min(b, r["last_resolved"])
        if end - start > thr:
            out.append({"topic": topic, "partition": part, "start_us": int(start),
                        "end_us": int(end), "seconds": round((end - start) / 1e6, 6),
                        "ended_by_ack": ended})
    return sorted(out, key=lambda w: (w["start_us"], w["topic"], w["partition"]))


def touched_by_fault(tl: Timeline, hist: dict[str, list], all_partitions: list[tuple[str, int]],
                     topics: list[str]) -> dict:
    """fault index -> (its touched partitions, how they were chosen): timeline's
    touched_partitions, with the partitions written while each fault was active
    from histograms()' "fault_sent" rows."""
    keys = {tp_key(topics, t, p): (t, p) for t, p in all_partitions}
    written: dict[int, set] = defaultdict(set)
    for i, tp, _, _, _ in hist["fault_sent"]:
        if tp in keys:
            written[i].add(keys[tp])
    return {i: touched_partitions(f, tl, all_partitions, sorted(written[i]))
            for i, f in enumerate(tl.faults)}


def window_owner(tl: Timeline, window: dict, threshold_us: int) -> str:
    """The fault_id a window belongs to (Timeline.owner: it was seen at its start plus
    the threshold, when it became a window), or "none"."""
    f = tl.owner(window["start_us"] + threshold_us)
    return f.fault_id if f is not None else "none"


def recovery(tl: Timeline, touched: dict, windows: list[dict],
             threshold_us: int = int(DEFAULT_UNAVAILABILITY_THRESHOLD_S * 1e6)) -> list[dict]:
    """Per fault, the spec's recovery from the unavailability windows that belong to it
    (window_owner): for each partition it touched, the end of its last such window
    minus the injection (0 when there is none: the fault cost no availability,
    `no_partition_unavailable`); `after_heal_s`, that end minus the heal (not below 0;
    null for a fault never healed); `unavailable_s`, those windows' summed seconds. A
    window of its own still open when sends ended makes the partition's recovery null
    (never recovered). The fault's three numbers are the largest over its partitions;
    `seconds` is null when a partition never recovered (and so are the other two).
    Reading: a partition with a window that belongs to the fault was touched by it,
    whether or not the observer saw its leader or ISR change. A fault that stopped or
    cut off the active controller also gets `controller_failover_s`. A fault that was
    not injected owns no window and touched nothing: 0, with its `inject_error`."""
    out = []
    for i, f in enumerate(tl.faults):
        mine = [w for w in windows if window_owner(tl, w, threshold_us) == f.fault_id]
        parts, reason = touched[i]
        parts = sorted(set(parts) | {(w["topic"], w["partition"]) for w in mine})
        per = {f"{t}-{p}": _partition_recovery(f, [
            w for w in mine if (w["topic"], w["partition"]) == (t, p)]) for t, p in parts}
        never = sorted(k for k, r in per.items() if r is None)
        failover = controller_failover(f, tl)
        out.append({"fault_id": f.fault_id, "name": f.name, "label": f.label,
                    "description": f.description, "target": f.target,
                    "start_us": f.start_us, "end_us": f.end_us, "healed": f.healed,
                    "inject_error": f.inject_error, "heal_error": f.heal_error,
                    "seconds": _largest(per, "seconds"),
                    "after_heal_s": _largest(per, "after_heal_s") if f.healed else None,
                    "unavailable_s": _largest(per, "unavailable_s"),
                    "windows": len(mine), "no_partition_unavailable": not mine,
                    "controller_failover_s": failover["seconds"] if failover else None,
                    "controller": failover,
                    "partitions": per, "partitions_from": reason, "never_recovered": never})
    return out


def _largest(per: dict, key: str) -> float | None:
    if any(r is None for r in per.values()):
        return None
    return round(max((r[key] for r in per.values()), default=0.0), 6)


def _partition_recovery(f, windows: list[dict]) -> dict | None:
    """One touched partition's recovery from its windows that began in the fault's
    span; None when one of them never closed."""
    if any(not w["ended_by_ack"] for w in windows):
        return None
    end = max((w["end_us"] for w in windows), default=None)
    if end is None:
        return {"seconds": 0.0, "after_heal_s": 0.0, "unavailable_s": 0.0}
    return {"seconds": round((end - f.start_us) / 1e6, 6),
            "after_heal_s": round(max(0, end - f.end_us) / 1e6, 6),
            "unavailable_s": round(sum(w["seconds"] for w in windows), 6)}
