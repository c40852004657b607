"""What a run's configuration says about the guarantees it should give.

Conditional expectations ("duplicate == 0 when idempotent") need facts about
the run. They come from RUN_DIR/scenario.yaml (the resolved scenario) and may
be overridden by the expectations file's `facts:` mapping. A fact that cannot
be found is None (unknown): expectations that depend on it are reported as
not judged, never silently passed or failed.

Keys read from scenario.yaml (each looked up at the top level and under
`workload:`; the first one present wins):

  idempotent       producer.enable_idempotence | producer.idempotent |
                   producer.config["enable.idempotence"]; true when transactional
  transactional    producer.transactional | producer.transactional_id |
                   producer.config["transactional.id"]
  acks_all         producer.acks | producer.config["acks"]  ("all" or -1)
  min_isr_2        topic.min_insync_replicas | topic.config["min.insync.replicas"] |
                   cluster.min_insync_replicas |
                   cluster.broker_config["min.insync.replicas"]   (>= 2)
  clean_elections  topic.config / cluster.broker_config
                   ["unclean.leader.election.enable"] | cluster.unclean_leader_election;
                   Kafka's default (false, so clean) when a scenario exists but does not say
  commit_after_processing
                   consumer.commit_after_processing (bool) | consumer.commit
                   ("after_processing"/"manual"/"sync"/"async" → true,
                    "auto"/"before_processing"/"none" → false) |
                   consumer.config["enable.auto.commit"] (true → false)
  durable          acks_all and min_isr_2 and clean_elections
"""
from __future__ import annotations

from typing import Any

FACTS = ("idempotent", "transactional", "acks_all", "min_isr_2", "clean_elections",
         "commit_after_processing", "durable")

_MISSING = object()


def _get(doc: Any, path: list[str]) -> Any:
    for part in path:
        if not isinstance(doc, dict) or part not in doc:
            return _MISSING
        doc = doc[part]
    return doc


def _first(scenario: dict, *paths: list[str]) -> tuple[Any, str | None]:
    for root in ([], ["workload"]):
        for path in paths:
            v = _get(scenario, root + path)
            if v is not _MISSING and v is not None:
                return v, ".".join(root + path)
    return _MISSING, None


def _truthy(v: Any) -> bool | None:
    if isinstance(v, bool):
        return v
    if isinstance(v, (int, float)):
        return bool(v)
    if isinstance(v, str):
        s = v.strip().lower()
        if s in ("true", "yes", "on", "1"):
            return True
        if s in ("false", "no", "off", "0"):
            return False
    return None


def derive_facts(scenario: dict | None) -> tuple[dict[str, bool | None], dict[str, str]]:
    """Facts and, per fact, where it came from (or why it is unknown)."""
    facts: dict[str, bool | None] = {f: None for f in FACTS}
    source: dict[str, str] = {f: "unknown: no scenario.yaml" for f in FACTS}
    if not isinstance(scenario, dict):
        return facts, source

    def put(name: str, value: bool | None, where: str | None) -> None:
        facts[name] = value
        source[name] = f"scenario.yaml {where}" if where else "unknown: not in scenario.yaml"

    v, w = _first(scenario, ["producer", "transactional"], ["producer", "transactional_id"],
                  ["producer", "config", "transactional.id"])
    if v is _MISSING:
        put("transactional", None, None)
    else:
        t = _truthy(v)
        put("transactional", t if t is not None else bool(str(v).strip()), w)

    v, w = _first(scenario, ["producer", "enable_idempotence"], ["producer", "idempotent"],
                  ["producer", "config", "enable.idempotence"])
    if facts["transactional"]:
        put("idempotent", True, (w or source["transactional"].split(" ", 1)[1])
            + " (transactional producers are idempotent)")
    else:
        put("idempotent", None if v is _MISSING else _truthy(v), w)

    v, w = _first(scenario, ["producer", "acks"], ["producer", "config", "acks"])
    put("acks_all", None if v is _MISSING else str(v).strip().lower() in ("all", "-1"), w)

    v, w = _first(scenario, ["topic", "min_insync_replicas"],
                  ["topic", "config", "min.insync.replicas"],
                  ["cluster", "min_insync_replicas"],
                  ["cluster", "broker_config", "min.insync.replicas"])
    try:
        put("min_isr_2", None if v is _MISSING else int(v) >= 2, w)
    except (TypeError, ValueError):
        put("min_isr_2", None, None)
        source["min_isr_2"] = f"unknown: {w} = {v!r} is not a number"

    v, w = _first(scenario, ["topic", "config", "unclean.leader.election.enable"],
                  ["cluster", "broker_config", "unclean.leader.election.enable"],
                  ["cluster", "unclean_leader_election"])
    if v is _MISSING:
        facts["clean_elections"] = True
        source["clean_elections"] = ("Kafka default (unclean.leader.election.enable=false); "
                                     "not in scenario.yaml")
    else:
        u = _truthy(v)
        put("clean_elections", None if u is None else not u, w)

    v, w = _first(scenario, ["consumer", "commit_after_processing"], ["consumer", "commit"],
                  ["consumer", "config", "enable.auto.commit"])
    if v is _MISSING:
        put("commit_after_processing", None, None)
    elif w and w.endswith("enable.auto.commit"):
        a = _truthy(v)
        put("commit_after_processing", None if a is None else not a, w)
    elif isinstance(v, str) and _truthy(v) is None:
        s = v.strip().lower().replace("-", "_")
        put("commit_after_processing",
            True if s in ("after_processing", "manual", "sync", "async") else
            False if s in ("auto", "before_processing", "none", "never") else None, w)
    else:
        put("commit_after_processing", _truthy(v), w)

    parts = [facts["acks_all"], facts["min_isr_2"], facts["clean_elections"]]
    if any(p is False for p in parts):
        facts["durable"] = False
    elif all(p is True for p in parts):
        facts["durable"] = True
    source["durable"] = "acks_all and min_isr_2 and clean_elections"
    return facts, source
