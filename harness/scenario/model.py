"""The scenario model: one typed, frozen description of an experiment.

Its sections contain the specs that own their fields (clusters.spec.ClusterSpec,
workloads.spec.ProducerSpec, ConsumerGroupSpec, DrainSpec, faults.schedule.ScheduleSpec,
verifiers.expectations.ExpectationSet); the facts a verifier asks are its properties
(`Scenario.facts`). harness/scenario/ loads it from YAML, harness/scenario/build.py
builds it section by section.
"""
from __future__ import annotations

from dataclasses import asdict
from functools import cached_property
from typing import Any

import yaml
from pydantic import BaseModel, ConfigDict, Field, InstanceOf

from clusters.spec import ClusterSpec
from families import named_by
from families.workload import Workload
from faults.catalog import ResolvedFault
from faults.schedule import ScheduleSpec
from spark_reports.load_plan import DEFAULT_MIN_LOAD_FRACTION, LoadPlan
from verifiers.expectations import ExpectationSet
from verifiers.facts import durable
from workloads.records import java_producer_name
from workloads.spec import DrainSpec, ProducerSpec

KAFKA_DEFAULT_MIN_ISR = 1


class _Model(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid", arbitrary_types_allowed=True)


class TopicSpec(_Model):
    name: str
    partitions: int = 3
    replication_factor: int = 3
    configs: dict[str, str] = {}


class TimelineFault(_Model):
    at: float                                # seconds after the faults phase starts
    fault: str                               # a faults.catalog kind
    target: Any = None                       # a selector spec (faults.selectors.parse_selector)
    params: dict[str, Any] = {}              # as written (the resolved document shows these)
    hold: float | None = None                # seconds until its heal; None: healed at heal-all
    # the same, parsed once by the builder: kind, selector, typed params (build() a fault)
    resolved: InstanceOf[ResolvedFault] | None = Field(None, exclude=True)


class Nemesis(_Model):
    presets: tuple[str, ...]                 # faults.catalog.PRESETS names
    topic: str
    partition: int = 0
    schedule: InstanceOf[ScheduleSpec]


class Faults(_Model):
    timeline: tuple[TimelineFault, ...] = ()
    nemesis: Nemesis | None = None
    recovery_timeout_s: float = 120.0        # full ISR again after heal-all


class AppliesTo(_Model):
    """Where a scenario makes sense, for a suite's --modes/--versions (empty: anywhere)."""
    modes: tuple[str, ...] = ()
    versions: tuple[str, ...] = ()


class Report(_Model):
    html: bool = True
    unavailability_threshold_s: float = 1.0
    # A producing workload that sent less than this fraction of its plan is short, and
    # fails the run (load_shortfall == 0, judged by default; spark_reports/load_plan.py).
    min_load_fraction: float = Field(DEFAULT_MIN_LOAD_FRACTION, ge=0.0, le=1.0)


class Scenario(_Model):
    name: str = "scenario"
    description: str = ""
    seed: int = 0
    cluster: InstanceOf[ClusterSpec]
    topics: tuple[TopicSpec, ...]
    workload: Workload
    faults: Faults = Faults()
    drain: InstanceOf[DrainSpec]
    expect: InstanceOf[ExpectationSet]
    report: Report = Report()
    applies_to: AppliesTo = AppliesTo()
    source: str = "(built in code)"

    # -- facts a verifier asks (verifiers.facts.FACTS) ---------------------------
    @cached_property
    def facts(self) -> dict[str, bool | None]:
        """The named families' facts of their section, and the topics' own."""
        facts: dict[str, bool | None] = {}
        for family in named_by(self.workload):
            facts.update(family.facts(self.workload))
        facts["min_isr_2"] = all(self.min_isr(t) >= 2 for t in self.topics)
        facts["clean_elections"] = not any(self.unclean_elections(t) for t in self.topics)
        facts["durable"] = durable(facts)
        return facts

    @property
    def load_plans(self) -> tuple[LoadPlan, ...]:
        """Each producing workload's plan, named as the history's produced.producer
        column names it (verifiers judge load_shortfall against these)."""
        w, fraction = self.workload, self.report.min_load_fraction
        plans = [LoadPlan(p.name, _producer_kind(p), rate=p.rate, duration_s=p.duration_s,
                          records=p.records, off_s=_churn_off_s(p),
                          restarts=p.churn is not None or p.on_fatal == "restart",
                          min_fraction=fraction) for p in w.producers]
        plans += [LoadPlan(java_producer_name(j.prefix), "Java VerifiableProducer",
                           rate=float(j.throughput) if j.throughput > 0 else None,
                           duration_s=w.duration_s, records=j.max_messages, min_fraction=fraction)
                  for j in w.java_producers]
        return tuple(plans)

    @property
    def image_versions(self) -> tuple[str, ...]:
        """Every Kafka version the run's nodes run: the cluster's, and each rolling
        upgrade's target."""
        upgrades = [e.resolved.params.to_version for e in self.faults.timeline
                    if e.fault == "rolling-upgrade"]
        return tuple(dict.fromkeys([self.cluster.version, *upgrades]))

    @property
    def written_partitions(self) -> tuple[tuple[str, int], ...]:
        """Every partition of a topic some producer writes to (the warm-up waits for each)."""
        w = self.workload
        written = ({p.topic for p in w.producers} | {j.topic for j in w.java_producers}
                   | {c.topic for c in w.compacted})
        return tuple((t.name, i) for t in self.topics if t.name in written
                     for i in range(t.partitions))

    def min_isr(self, topic: TopicSpec) -> int:
        value = topic.configs.get("min.insync.replicas") or dict(self.cluster.config).get(
            "min.insync.replicas")
        return int(value) if value is not None else KAFKA_DEFAULT_MIN_ISR

    def unclean_elections(self, topic: TopicSpec) -> bool:
        value = topic.configs.get("unclean.leader.election.enable") or dict(
            self.cluster.config).get("unclean.leader.election.enable", "false")
        return str(value).lower() == "true"

    # -- the resolved document ------------------------------------------------------
    def to_dict(self) -> dict[str, Any]:
        dump = self.model_dump(mode="json", exclude={"cluster", "drain", "expect", "faults",
                                                     "workload", "source"})
        workload = self.workload.model_dump(mode="json")
        faults = self.faults.model_dump(mode="json", exclude={"nemesis"})
        if self.faults.nemesis is not None:
            n = self.faults.nemesis
            faults["nemesis"] = {"presets": list(n.presets), "topic": n.topic,
                                 "partition": n.partition, **_schedule_fields(n.schedule)}
        return {"name": dump["name"], "description": dump["description"],
                "seed": dump["seed"], "cluster": self.cluster.to_dict(),
                "topics": dump["topics"], "workload": workload, "faults": faults,
                "drain": self.drain.model_dump(mode="json"),
                "expect": {"expectations": [e.text for e in self.expect.expectations],
                           "facts": dict(self.expect.facts)},
                "report": dump["report"], "applies_to": dump["applies_to"]}

    def to_yaml(self) -> str:
        return yaml.safe_dump(self.to_dict(), sort_keys=False, default_flow_style=False)


def _producer_kind(p: ProducerSpec) -> str:
    kind = "transactional producer" if p.transactions is not None else "producer"
    return f"Java {kind}" if p.client == "java" else kind


def _churn_off_s(p: ProducerSpec) -> float:
    """The seconds a churned producer is planned to be away: down_s per restart
    (workloads/producer_churn.py: the first at first_s, then every_s after each comes
    back, none in the last down_s + 2 s)."""
    c, duration = p.churn, p.duration_s
    if c is None or duration is None:
        return 0.0
    restarts, at = 0, c.first_s
    while at < duration - c.down_s - 2.0:
        restarts, at = restarts + 1, at + c.down_s + c.every_s
    return restarts * c.down_s


def _schedule_fields(spec: ScheduleSpec) -> dict[str, Any]:
    return {k: v for k, v in asdict(spec).items() if k != "kinds"}
