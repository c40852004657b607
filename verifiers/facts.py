"""What a run's configuration says about the guarantees it should give.

Conditional expectations ("duplicate == 0 when idempotent") need facts about
the run. They come from the typed scenario model (harness.scenario.Scenario),
read from RUN_DIR/scenario.yaml, never from guessed key paths; the
expectations file's `facts:` mapping may override them. A fact that cannot be
known (no scenario.yaml, or one that is not a valid scenario) is None:
expectations that depend on it are reported as not judged, never silently
passed or failed.

  idempotent       every producer is idempotent (transactional ones are)
  transactional    some producer is transactional
  acks_all         every producer sends with acks=all
  min_isr_2        every topic's min.insync.replicas (topic config, else the
                   cluster's, else Kafka's default 1) is at least 2
  clean_elections  no topic allows unclean leader election (Kafka's default)
  commit_after_processing
                   every consumer group commits only what it recorded
                   (None when the scenario has no consumer group)
  durable          acks_all and min_isr_2 and clean_elections
"""
from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from harness.scenario import Scenario

FACTS = ("idempotent", "transactional", "acks_all", "min_isr_2", "clean_elections",
         "commit_after_processing", "durable")


def facts_of(scenario: "Scenario") -> dict[str, bool | None]:
    w = scenario.workload
    producers = list(w.producers)
    java_acks = [j.acks in ("all", "-1") for j in w.java_producers]
    java_idem = [j.acks in ("all", "-1") and j.config.get("enable.idempotence", "true") == "true"
                 for j in w.java_producers]
    facts: dict[str, bool | None] = {
        "transactional": any(p.transactions is not None for p in producers),
        "idempotent": all([*(p.enable_idempotence for p in producers), *java_idem]),
        "acks_all": all([*(p.acks == "all" for p in producers), *java_acks]),
        "min_isr_2": all(scenario.min_isr(t) >= 2 for t in scenario.topics),
        "clean_elections": not any(scenario.unclean_elections(t) for t in scenario.topics),
        "commit_after_processing": (all(c.commit == "after-processing" for c in w.consumers)
                                    if w.consumers else None),
    }
    facts["durable"] = facts["acks_all"] and facts["min_isr_2"] and facts["clean_elections"]
    return facts


def model_facts(model: "Scenario | None", why: str | None
                ) -> tuple[dict[str, bool | None], dict[str, str]]:
    """The model's facts and, per fact, where it came from (`why` when there is none)."""
    if model is None:
        return {f: None for f in FACTS}, {f: why or "unknown" for f in FACTS}
    facts = dict(model.facts)
    sources = {f: "scenario model" for f in FACTS}
    if facts["commit_after_processing"] is None:
        sources["commit_after_processing"] = "unknown: the scenario has no consumer group"
    return facts, sources
