"""What a run is judged by: one typed object, built by the harness from the scenario
model, the same whether the run is live or loaded from a stored run.

`harness run` builds it from the run's own model; `harness verify RUN_DIR` from the
run's stored scenario.yaml, read once into the model (harness/run/judge.py). Without a
model (no scenario.yaml, or one that is not a valid scenario) the facts are unknown and
say why, and the expectations are the stored document's own `expect:` when it can be
read, else the defaults. `verifiers.verify.verify_run` takes this and nothing else of
the scenario.
"""
from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from families import FAMILIES
from families.records.availability import DEFAULT_UNAVAILABILITY_THRESHOLD_S
from verifiers.expectations import ExpectationSet, load_expectations
from verifiers.facts import FACTS, durable

ALL_FAMILIES = tuple(f.name for f in FAMILIES)


@dataclass(frozen=True)
class Judgement:
    expectations: ExpectationSet
    facts: Mapping[str, bool | None]
    fact_sources: Mapping[str, str]
    threshold_s: float = DEFAULT_UNAVAILABILITY_THRESHOLD_S   # report.unavailability_threshold_s
    html: bool = True                                         # report.html
    families: tuple[str, ...] = ALL_FAMILIES                  # whose checkers run
    # the scenario as a document, for the report (None: the run's is unknown)
    scenario_doc: dict[str, Any] | None = None
    notes: tuple[str, ...] = ()                               # what reading it found
    # each producing workload's plan (Scenario.load_plans; None: load_shortfall not judged)
    load_plans: tuple | None = None
    extras: Mapping[str, Any] = field(default_factory=dict)

    @property
    def threshold_us(self) -> int:
        return int(self.threshold_s * 1_000_000)

    @classmethod
    def without_model(cls, why: str, expectations: ExpectationSet | None = None,
                      scenario_doc: dict | None = None, notes: tuple[str, ...] = (),
                      html: bool = True) -> "Judgement":
        """Facts unknown (`why`), every family checked."""
        exps = expectations or load_expectations(None, "defaults")
        return cls(exps, {f: None for f in FACTS}, {f: why for f in FACTS}, html=html,
                   scenario_doc=scenario_doc, notes=notes).with_expectations(exps)

    def with_expectations(self, exps: ExpectationSet) -> "Judgement":
        """These expectations, and the facts they override (`facts:` in an expectations
        document): durable follows its parts unless it is overridden itself."""
        facts, sources = dict(self.facts), dict(self.fact_sources)
        for k, v in exps.facts:
            facts[k], sources[k] = v, f"{exps.source}: facts.{k}"
        names = {k for k, _ in exps.facts}
        if names & {"acks_all", "min_isr_2", "clean_elections"} and "durable" not in names:
            facts["durable"] = durable(facts)
        return replace(self, expectations=exps, facts=facts, fact_sources=sources)
