"""What a run's configuration says about the guarantees it should give.

Conditional expectations ("duplicate == 0 when idempotent") need facts about the
run. Each is computed by the part of the scenario that owns it: a workload family's
facts of its section (families/*: `Family.facts`, named in its `fact_docs`), the
topics' own below; the scenario model composes them (`Scenario.facts`,
harness/scenario/model.py) and the Judgement carries them to the verifier, never
guessed from key paths. The expectations file's `facts:` mapping may override them.
A fact that cannot be known (no scenario.yaml, or one that is not a valid scenario)
is None: expectations that depend on it are reported as not judged, never silently
passed or failed.

Each family's facts (today: records' idempotent, acks_all, commit_after_processing;
transactions' transactional), and the topics':

  min_isr_2        every topic's min.insync.replicas (topic config, else the
                   cluster's, else Kafka's default 1) is at least 2
  clean_elections  no topic allows unclean leader election (Kafka's default)
  durable          acks_all and min_isr_2 and clean_elections
"""
from __future__ import annotations

from typing import Any

from families import FAMILIES

TOPIC_FACTS = {
    "min_isr_2": "every topic's min.insync.replicas is at least 2",
    "clean_elections": "no topic allows unclean leader election",
    "durable": "acks_all and min_isr_2 and clean_elections",
}
FACT_DOCS: dict[str, str] = {**{k: v for f in FAMILIES for k, v in f.fact_docs.items()},
                             **TOPIC_FACTS}
FACTS: tuple[str, ...] = tuple(FACT_DOCS)


def durable(facts: dict) -> bool | None:
    """acks_all and min_isr_2 and clean_elections: False when one is false, None when one
    is unknown (and none false)."""
    parts = [facts.get("acks_all"), facts.get("min_isr_2"), facts.get("clean_elections")]
    if any(p is False for p in parts):
        return False
    return True if all(p is True for p in parts) else None


def model_facts(model: Any, why: str | None
                ) -> tuple[dict[str, bool | None], dict[str, str]]:
    """The model's facts and, per fact, where it came from (`why` when there is none)."""
    if model is None:
        return {f: None for f in FACTS}, {f: why or "unknown" for f in FACTS}
    facts = dict(model.facts)
    sources = {f: "scenario model" for f in FACTS}
    if facts.get("commit_after_processing") is None:
        sources["commit_after_processing"] = "unknown: the scenario has no consumer group"
    return facts, sources
