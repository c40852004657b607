"""The share-group family's metrics, per group: deliveries, decisions and answers,
errors by name, redeliveries by cause, and for each member that was killed or
closed, how long the records it held took to come back.

Computed on the driver from the `share_deliveries` rows (pyarrow; a run's deliveries
are about as many as its records), beside the Spark checker: no Spark job.
"""
from __future__ import annotations

import json
import statistics
from collections import Counter, defaultdict

from families.shares.checker import GroupParams, gone_times, group_params

COLUMNS = ("group_id", "consumer", "topic", "partition", "offset", "delivery_count",
           "recv_ts_us", "ack", "ack_ts_us", "ack_result", "ack_error")
LATE_SLACK_S = 5.0


def share_metrics(rows: list[dict], events: list[dict]) -> dict[str, dict]:
    """group -> its metrics (summary["share_groups"])."""
    params = group_params(events)
    gone = gone_times(events)
    how = _how_gone(events)
    by_group: dict[str, list[dict]] = defaultdict(list)
    for r in rows:
        by_group[r["group_id"]].append(r)
    return {g: _group(g, by_group.get(g, []), params.get(g), gone, how, events)
            for g in sorted(set(by_group) | set(params))}


def _group(g: str, rows: list[dict], p: GroupParams | None, gone: dict, how: dict,
           events: list[dict]) -> dict:
    positions: dict[tuple, list[dict]] = defaultdict(list)
    for r in sorted(rows, key=lambda r: (r["recv_ts_us"], r["consumer"])):
        positions[(r["topic"], r["partition"], r["offset"])].append(r)
    results: dict[str, Counter] = defaultdict(Counter)
    for r in rows:
        if r["ack"] is not None:
            results[r["ack"]][r["ack_result"]] += 1
    lock_ms = p.lock_ms if p else None
    limit = p.limit if p else None
    return {
        "deliveries": len(rows),
        "deliveries_drain": sum(r["consumer"] == "drain" for r in rows),
        "positions": len(positions),
        "members": len({r["consumer"] for r in rows} - {"drain"}),
        "decided": {a: sum(c.values()) for a, c in sorted(results.items())},
        "results": {a: dict(c) for a, c in sorted(results.items())},
        "undecided": sum(r["ack"] is None for r in rows),
        "ack_errors": dict(Counter(r["ack_error"] for r in rows if r["ack_error"])),
        "unresolved": sum(1 for ds in positions.values()
                          if ds[-1]["ack"] in ("accept", "reject") and ds[-1]["ack_result"] == "unknown"
                          and not any(d["ack_result"] == "ok" and d["ack"] in ("accept", "reject") for d in ds)),
        "archived": sum(1 for ds in positions.values() if limit is not None and max(
            (d["delivery_count"] or 0 for d in ds), default=0) >= limit
            and not any(d["ack_result"] == "ok" and d["ack"] in ("accept", "reject") for d in ds)),
        "redelivered": sum(len(ds) - 1 for ds in positions.values()),
        "lock_ms": lock_ms, "delivery_count_limit": limit,
        "drain": _drain_result(g, events),
        "per_second": _per_second(rows),
        "longest_gap": _longest_gap(rows),
        "returns": _returns(g, rows, positions, gone, how, lock_ms),
    }


def _longest_gap(rows: list[dict]) -> dict | None:
    """The longest time the group's members (the drain aside) received nothing, between
    their first and last delivery: how long the queue stood still."""
    times = sorted(r["recv_ts_us"] for r in rows if r["consumer"] != "drain")
    if len(times) < 2:
        return None
    gap, at = max((b - a, a) for a, b in zip(times, times[1:], strict=False))
    return {"seconds": round(gap / 1e6, 3), "from_us": at}


def _per_second(rows: list[dict]) -> list[dict]:
    """Deliveries per second (by receive time) and decisions per second by type (by
    decision time), for the family's plot."""
    by: dict[int, Counter] = defaultdict(Counter)
    for r in rows:
        by[r["recv_ts_us"] // 1_000_000]["deliveries"] += 1
        if r["ack"] is not None and r["ack_ts_us"] is not None:
            by[r["ack_ts_us"] // 1_000_000][r["ack"]] += 1
    return [{"second": s, **by[s]} for s in sorted(by)]


def _how_gone(events: list[dict]) -> dict[tuple[str, str], str]:

    out = {}
    for e in events:
        if e.get("kind") == "client" and e.get("name") in ("share-member-kill", "share-member-close"):
            d = json.loads(e.get("detail") or "{}")
            out[(d.get("group_id"), e.get("target"))] = (
                "kill" if e["name"].endswith("kill") else "stop" if d.get("why") == "run-end" else "close")
    return out


def _drain_result(g: str, events: list[dict]) -> dict | None:

    for e in events:
        if e.get("name") == "share-drain-result":
            d = json.loads(e.get("detail") or "{}")
            if d.get("group_id") == g:
                return {k: d.get(k) for k in ("records", "seconds", "missing", "quiet_s", "complete")}
    return None


def _returns(g: str, rows: list[dict], positions: dict, gone: dict, how: dict,
             lock_ms: int | None) -> list[dict]:
    """Per member killed or closed: the records it held (received before, and not
    answered: undecided, or decided with no answer) and when each was next delivered.
    Late: a return after the lock + 5 s, or an undecided record that never came back
    (a decided one with no answer may have been applied: its absence is not late)."""
    out = []
    for (group, member), at in sorted(gone.items(), key=lambda kv: kv[1]):
        if group != g or (group, member) not in how:
            continue
        # every row of a member (one incarnation: a restart has a name of its own) came
        # before it was gone, whatever the clocks say: a Java member's own millisecond
        # clock put its last batch 1 ms after the harness's kill time, and a member
        # killed holding that batch was counted as holding nothing
        held = [r for r in rows if r["consumer"] == member
                and (r["ack"] is None or r["ack_result"] == "unknown")]
        waits = []
        for r in held:
            nxt = next((d for d in positions[(r["topic"], r["partition"], r["offset"])]
                        if d["recv_ts_us"] > at and d is not r), None)
            waits.append((r, None if nxt is None else (nxt["recv_ts_us"] - at) / 1e6))
        came = [w for _, w in waits if w is not None]
        late = None if lock_ms is None else sum(
            1 for r, w in waits if (w is None and r["ack"] is None)
            or (w is not None and w > lock_ms / 1000 + LATE_SLACK_S))
        out.append({"member": member, "how": how[(group, member)], "at_us": at,
                    "held": len(held), "undecided": sum(r["ack"] is None for r in held),
                    "returned": len(came), "never_returned": len(held) - len(came), "late": late,
                    "p50_s": round(statistics.median(came), 3) if came else None,
                    "max_s": round(max(came), 3) if came else None})
    return out


def derived(groups: dict[str, dict]) -> dict[str, float | None]:
    """The expectations' derived metrics: max_share_return_s, share_late_returns, and
    share_held_returns (members killed or closed by the churn while they held records:
    the returns that exercised the lock's hand-back)."""
    # members stopped at the run's end are not judged: what they held waits for the
    # final drain, which the harness starts later
    returns = [r for m in groups.values() for r in m.get("returns", []) if r["how"] != "stop"]
    return {"max_share_return_s": max((r["max_s"] for r in returns if r["max_s"] is not None), default=0.0),
            "share_late_returns": sum(r["late"] or 0 for r in returns),
            "share_held_returns": sum(r["held"] > 0 for r in returns)}
