"""The pipeline family's metrics, per pipeline (summary.pipelines.<pipeline>,
docs/history.md): from its events, on the driver (no Spark job).

Typed here (PipelineMetrics); summary.json holds their JSON form, read back with
`from_dict` by the family's words.
"""
from __future__ import annotations

import json
from dataclasses import asdict, dataclass, fields
from typing import Any

STAT_EVENTS = ("pipeline-stats", "pipeline-closed")
# what an instance's stats say; summed over each instance's last ones
STATS = ("begun", "committed", "aborted", "outputs", "restores")


@dataclass
class PipelineMetrics:
    processing: str | None = None
    instances: int = 0                   # started (a restart starts a new one)
    kills: int = 0
    restarts: int = 0
    fenced: int = 0
    rebalances: int = 0                  # assignments, each rebuilding its counts
    aborted_events: int = 0
    # of each instance's last stats, summed; None: no instance wrote any (then these
    # five are left out of the JSON form, as summaries have always had them)
    begun: int | None = None
    committed: int | None = None
    aborted: int | None = None
    outputs: int | None = None
    restores: int | None = None
    rebuilds: int = 0                    # clients made again after a fatal error, not fenced
    # instances the churn killed or closed after an output of theirs was committed (the
    # drain read it): their tasks moved with state. None: not measured (older summaries)
    handovers: int | None = None
    # the churn's clock (pipeline-churn-clock): whether it started before the load ended,
    # and how long it had waited for its first victim's first committed output. None:
    # no churn, or a run from before the clock
    churn_started: bool | None = None
    churn_waited_s: float | None = None

    def add_stats(self, stats: dict) -> None:
        for k in STATS:
            setattr(self, k, (getattr(self, k) or 0) + int(stats.get(k) or 0))

    def to_dict(self) -> dict[str, Any]:
        doc = asdict(self)
        if self.committed is None:
            for k in STATS:
                del doc[k]
        for k in ("handovers", "churn_started", "churn_waited_s"):
            if doc[k] is None:
                del doc[k]
        return doc

    @classmethod
    def from_dict(cls, doc: dict[str, Any]) -> "PipelineMetrics":
        known = {f.name for f in fields(cls)}
        return cls(**{k: v for k, v in doc.items() if k in known})


def churned_instances(events: list[dict]) -> dict[str, set[str]]:
    """pipeline -> the instances its churn killed or closed (a close at the run's end is
    not churn)."""
    out: dict[str, set[str]] = {}
    for e in events:
        if e.get("kind") != "client" or e.get("name") not in ("pipeline-instance-kill",
                                                             "pipeline-instance-close"):
            continue
        d = json.loads(e.get("detail") or "{}")
        if d.get("pipeline") is not None and d.get("why") != "run-end":
            out.setdefault(d["pipeline"], set()).add(e.get("target"))
    return out


def pipeline_metrics(events: list[dict]) -> dict[str, PipelineMetrics]:
    """pipeline -> transactions begun, committed and aborted, outputs written (each
    instance's last stats), restores, fenced and rebuilt instances, kills and restarts."""
    last: dict[tuple[str, str], dict] = {}
    out: dict[str, PipelineMetrics] = {}
    for e in sorted(events, key=lambda e: e["ts_us"]):
        if e.get("kind") != "client" or not str(e.get("name", "")).startswith("pipeline-"):
            continue
        d = json.loads(e.get("detail") or "{}")
        name = d.get("pipeline")
        if name is None:
            continue
        m = out.setdefault(name, PipelineMetrics())
        kind = e["name"]
        if kind == "pipeline-config":
            m.processing = d.get("processing")
        elif kind in STAT_EVENTS:
            last[(name, e.get("target"))] = d
        m.instances += kind == "pipeline-instance-start"
        m.kills += kind == "pipeline-instance-kill"
        m.restarts += kind == "pipeline-instance-restart"
        m.fenced += kind == "pipeline-fenced"
        m.rebuilds += kind == "pipeline-rebuild"
        m.rebalances += kind == "pipeline-rebalance" and d.get("type") == "assigned"
        m.aborted_events += kind == "pipeline-txn-aborted"
        if kind == "pipeline-churn-clock":
            m.churn_started, m.churn_waited_s = d.get("started", True), d.get("waited_s")
    for (name, _), d in last.items():
        out[name].add_stats(d)
    return out
