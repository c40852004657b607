"""The mirrored family (issue 38): MirrorMaker 2 in dedicated mode copies the scenario's
topics from the run's cluster (the source) to a second cluster the family starts (the
target); a drain that waits for MM2 to catch up and reads the target's mirrored topics
whole (clients.py, catchup.py, mm2.py, jars.py); its section (section.py), its checker
and kinds (checker.py, kinds.py), its words.

Its copies are `consumed` rows with cluster = target, in mirrored topics of their own
names (`source.<topic>`): the pipeline gives them to this family alone (the
`consumed_target` frame), so the records family judges the source as ever.
"""
from __future__ import annotations

import json

from families.base import Family, RunData
from families.mirror.checker import mirror_params
from families.mirror.kinds import KINDS
from families.mirror.lag import lag_series
from families.mirror.section import FACT_DOCS, FAILOVER_EVENT, facts, target_topic


def _start(ctx, workload):
    from families.mirror.clients import MirrorWorkloads  # confluent-kafka, Docker: only when run
    return MirrorWorkloads(ctx, workload)


def mirror_metrics(events: list[dict]) -> dict:
    """What the run's events say of the mirror: its versions, its mode, the catch-up wait."""
    config, caught = mirror_params(events)
    if config is None:
        return {}
    parts = (caught or {}).get("partitions") or []
    return {"source_version": config.get("source_version"),
            "target_version": config.get("target_version"),
            "exactly_once": config.get("exactly_once"),
            "target_topics": config.get("target_topics"),
            "caught_up": None if caught is None else caught.get("caught_up"),
            "waited_s": None if caught is None else caught.get("waited_s"),
            "mm2_killed": bool((caught or {}).get("mm2_killed")) or any(
                e.get("kind") == "fault" and e.get("name") == "mm2-kill" for e in events),
            "partitions_behind": [p for p in parts if not p.get("caught_up")],
            "checkpoints": (caught or {}).get("checkpoints"),
            # tasks Connect killed for good (mm2.task_failures); absent in runs stored
            # before it was recorded
            "task_failures": (caught or {}).get("task_failures") or [],
            "lag_per_second": lag_series(events),
            "failover": _failover(events)}


def _failover(events: list[dict]) -> dict | None:
    """The failover's event (failover.py): where each group resumed on the target."""
    for e in events:
        if e.get("kind") == "client" and e.get("name") == FAILOVER_EVENT:
            return json.loads(e.get("detail") or "{}")
    return None


def failover_words(f: dict | None) -> list[str]:
    if not f:
        return []
    how = ("" if f.get("synced") else
           " once MM2 had nothing newer to say (it checkpoints only a translation that moves "
           f"on; not checkpointed: {'; '.join(f.get('waiting') or [])})" if f.get("settled") else
           f" without MM2 having synced every last commit ({'; '.join(f.get('waiting') or [])})")
    lines = [f"The consumer groups failed over to the target after {f.get('waited_s')} s{how}:"]
    for g, d in sorted((f.get("groups") or {}).items()):
        target = d.get("target") or {}
        pairs = ", ".join(f"{tp}:{o} → {target_topic('')}{tp}:{target.get(target_topic(tp), 'none')}"
                          for tp, o in sorted((d.get("source") or {}).items()))
        lines.append(f"group {g}: last source commit → where it resumed on the target: "
                     f"{pairs or 'no commit'}; it read {d.get('read')} records there.")
    return lines




def _metrics(data: RunData) -> dict:
    m = mirror_metrics(data.events)
    behind = len(m.get("partitions_behind") or [])
    lags = [r["lag"] for r in m.get("lag_per_second") or []]
    return {"summary": {"mirror": m},
            "counts": {"mirror_partitions_behind": behind,
                       "mirror_catch_up_s": m.get("waited_s") or 0,
                       "max_mirror_lag": max(lags, default=0),
                       # none: no translated offset was judged (translation_skip == 0 holds
                       # then without a checkpoint to hold for): `mirror_checkpoints > 0`
                       "mirror_checkpoints": m.get("checkpoints") or 0,
                       "mirror_task_failures": len(m.get("task_failures") or [])}}


def _series(summary) -> list[tuple]:
    m = summary.get("mirror") or {}
    rows = m.get("lag_per_second") or []
    return [(f"MirrorMaker 2 replication lag ({lag_measure(m)})", "records", rows,
             ("lag",))] if rows else []


def lag_measure(m: dict) -> str:
    """What the lag is measured against (families/mirror/lag.py)."""
    return ("source end − MM2's committed source offsets" if m.get("exactly_once")
            else "source end − target end")


def _words(summary: dict) -> list[str]:
    m = summary.get("mirror") or {}
    if not m:
        return []
    mode = "with exactly-once support" if m["exactly_once"] else "at least once"
    if m.get("mm2_killed"):
        mode += ", killed and restarted once"
    topics = ", ".join(f"{s} → {t}" for s, t in (m.get("target_topics") or {}).items())
    wait = ("the mirror drain did not run" if m["caught_up"] is None else
            f"caught up after {m['waited_s']} s" if m["caught_up"] else
            f"{len(m['partitions_behind'])} source partitions not caught up after "
            f"{m['waited_s']} s (their records are not judged as lost, and the run fails: "
            f"read MM2's log; after losing the target, a one-worker MM2 waits Connect's "
            f"scheduled.rebalance.max.delay.ms, 5 min, for its own tasks)")
    lags = m.get("lag_per_second") or []
    peak = max(lags, key=lambda r: r["lag"], default=None)
    lag = ("" if peak is None else
           f" Replication lag ({lag_measure(m)}), sampled every second during the load: at "
           f"most {peak['lag']} records (median {sorted(r['lag'] for r in lags)[len(lags) // 2]}).")
    checkpoints = ("" if m.get("checkpoints") is None else
                   f" It emitted {m['checkpoints']} checkpoints of the source's groups." if m["checkpoints"]
                   else " It emitted no checkpoint of the source's groups: no translated offset was "
                   "judged (translation_skip and translation_rewind had nothing to count).")
    return [f"MirrorMaker 2 {m['target_version']} ({mode}) from Kafka {m['source_version']} "
            f"to {m['target_version']}: {topics}; {wait}.{lag}{checkpoints}",
            *task_failure_words(m.get("task_failures")), *failover_words(m.get("failover"))]


def task_failure_words(failures: list[dict] | None) -> list[str]:
    """The tasks Connect killed for good: a dedicated MM2 never starts them again, so
    what they did (copying, checkpoints) stops until MM2 itself is restarted."""
    if not failures:
        return []
    each = "; ".join(f"{f.get('task')} at {f.get('at')}: {f.get('error') or 'no exception logged'}"
                     for f in failures)
    return [f"{len(failures)} MirrorMaker 2 task(s) failed and were never restarted (Connect "
            f"does not restart a failed task, and a dedicated MM2 has no REST API to ask it "
            f"to; restart MM2): {each}. An exactly-once task that cannot read its config "
            f"topic within worker.sync.timeout.ms (3 s by default) as it starts fails so."]


FAMILY = Family(
    name="mirror", title="Mirrored topics (MirrorMaker 2)",
    kinds=KINDS,
    named_by=lambda workload: getattr(workload, "mirror", None) is not None,
    facts=facts, fact_docs=FACT_DOCS, start=_start, words=_words, metrics=_metrics,
    counts=("mirror_partitions_behind", "mirror_catch_up_s", "max_mirror_lag", "mirror_checkpoints",
            "mirror_task_failures"),
    # a run whose groups MM2 never checkpointed judged no translated offset; one whose MM2
    # had not caught up judged no record of the partitions behind (seen: a 40 s cut from
    # the target stalled a one-worker MM2 for Connect's 5 min rebalance delay, and the
    # run passed with 1 353 of 12 000 records copied)
    defaults=("mirror_checkpoints > 0 when mirror_translates", "mirror_partitions_behind == 0"),
    series=_series,
    before_load=True)
