"""The compacted-topic family's scenario section: `workload.compacted`, and the rules that
tie it to the scenario's topics.

    compacted:
      - topic: state            # a topic of topics:; compacted by the settings below
        name: cw0               # default cw<i>: its writer's name (record_ids cw0-0, cw0-1 …)
        keys: 64                # keys k0 … k63, each with its own version 0, 1, 2 …
        rate: 200               # writes/s
        tombstone_rate: 0.1     # the fraction of writes that are tombstones (null values)
        record_size: 100
        acks: all
        clean_timeout_s: 120    # the drain's bound on its wait for the log cleaner

The topic's cleaner settings. The section *sets* those the topic does not set (they
show in the resolved scenario) and *refuses* values that would keep the cleaner from
acting within a run. Why set rather than refuse a topic without them: they are not a
choice the scenario makes but the mechanism that lets a run of a minute see the cleaner
at all, and a forgotten one (say, the broker's default min.cleanable.dirty.ratio of
0.5, or the 7-day segment.ms) leaves a cleaner that never runs, which would make both
kinds pass without judging anything. A value the scenario sets itself is kept, so a
scenario can still ask for, e.g., a longer delete.retention.ms.

The builder (harness/scenario/build.py) calls `compacted` per item and
`check_compacted` once the topics, producers and drain are known; every refusal names
its field.
"""
from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationInfo, field_validator

from workloads.spec import ProducerSpec, fraction, named, written_by_a_producer

# the family's events: a writer's config (when started), and what the drain saw of the
# cleaner (families/compacted/drain.py)
CONFIG_EVENT = "compacted-config"
CLEANED_EVENT = "compacted-cleaned"
# the cleaner's settings that make it act within a run (Kafka's topic configs)
TOPIC_SETTINGS: dict[str, str] = {
    "cleanup.policy": "compact",
    "segment.ms": "3000",                  # a segment rolls at the first write 3 s after it began
    "segment.bytes": "1048576",            # Kafka 4's floor (1 MiB); 3.x accepts it too
    "min.cleanable.dirty.ratio": "0.01",   # clean as soon as anything is dirty
    "min.compaction.lag.ms": "0",
    "max.compaction.lag.ms": "5000",       # a segment is cleanable 5 s after it was written
    "delete.retention.ms": "5000",         # a tombstone may go 5 s after its segment was cleaned
}
# settings longer than the cleaner wait (ms) would keep the cleaner from the whole log
BOUNDED_BY_WAIT = ("segment.ms", "min.compaction.lag.ms", "max.compaction.lag.ms")


class CompactedSpec(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")
    topic: str
    name: str
    keys: int = Field(64, ge=1, le=1_000_000)
    rate: float = Field(200.0, gt=0)
    tombstone_rate: float = 0.1
    record_size: int = Field(100, ge=32)
    acks: Literal["1", "all"] = "all"
    clean_timeout_s: float = Field(120.0, gt=0)
    # resolved by the builder: the topic's configs, the cleaner's settings filled in
    topic_configs: dict[str, str] = {}

    @property
    def segment_ms(self) -> int:
        return int(self.topic_configs.get("segment.ms", TOPIC_SETTINGS["segment.ms"]))

    @property
    def delete_retention_ms(self) -> int:
        return int(self.topic_configs.get("delete.retention.ms",
                                          TOPIC_SETTINGS["delete.retention.ms"]))

    @field_validator("tombstone_rate")
    @classmethod
    def _fraction(cls, v: float, info: ValidationInfo) -> float:
        return fraction(v, info.field_name, " (0.1: one write in ten deletes its key)")

    @field_validator("acks", mode="before")
    @classmethod
    def _acks(cls, v: Any) -> Any:
        return str(v) if isinstance(v, int) and not isinstance(v, bool) else v

    @field_validator("name")
    @classmethod
    def _name(cls, v: str) -> str:
        return named(v)

    def producer(self, duration_s: float, seed: int) -> ProducerSpec:
        """Its writer: our verifiable producer, keyed per key with versions, tombstones
        at tombstone_rate (workloads/producer.py)."""
        return ProducerSpec(name=self.name, topic=self.topic, acks=self.acks,
                            enable_idempotence=self.acks == "all", keys="per_key",
                            key_count=self.keys, record_size=self.record_size, rate=self.rate,
                            duration_s=duration_s, seed=seed, tombstone_rate=self.tombstone_rate)


def compacted(i: int, raw: dict[str, Any], first_topic: str) -> CompactedSpec:
    """An item of workload.compacted with its defaults (a SpecError names its field)."""
    return CompactedSpec(**{"name": f"cw{i}", "topic": first_topic, **raw})


def topic_configs(configs: dict[str, str], spec: CompactedSpec) -> tuple[dict[str, str], tuple | None]:
    """The topic's configs with the cleaner's settings it lacks, and the first refusal
    (field under configs, problem, fix), or None."""
    policy = configs.get("cleanup.policy", "compact")
    if "compact" not in policy.split(","):
        return configs, ("cleanup.policy", f"{policy!r}: the topic is not compacted",
                         "use compact (or compact,delete), or leave it out: it is set for you")
    for name in BOUNDED_BY_WAIT:
        if name in configs and int(configs[name]) > spec.clean_timeout_s * 1000:
            return configs, (name, f"{configs[name]} ms is longer than the cleaner wait "
                             f"(clean_timeout_s: {spec.clean_timeout_s:g}): the cleaner would "
                             "not reach the last writes within the run",
                             f"leave it out (default {TOPIC_SETTINGS[name]}), or raise clean_timeout_s")
    return {**TOPIC_SETTINGS, **configs}, None


def check_compacted(items, topics: dict[str, int], producers, drain_topics) -> list[tuple[int, str, str, str]]:
    """The rules across sections: (index, field, problem, fix) of the first refusal, or [].
    `topics`: name -> partitions; `producers`: the records family's producers;
    `drain_topics`: the final drain's topics as the scenario gave them (None: default)."""
    for i, c in enumerate(items):
        if c.topic not in topics:
            return [(i, "topic", f"topic {c.topic!r} is not among the scenario's topics",
                     f"use one of {', '.join(topics)}, or add it under topics:")]
        for j, other in enumerate(items[:i]):
            if other.topic == c.topic:
                return [(i, "topic", f"item {j} writes {c.topic!r} too",
                         "give each compacted writer a topic of its own")]
            if other.name == c.name:
                return [(i, "name", f"{c.name!r} is item {j}'s name too", "give each its own name")]
        if any(p.name == c.name for p in producers):
            return [(i, "name", f"{c.name!r} is a producer's name too",
                     "give the compacted writer another name")]
        if refusal := written_by_a_producer(i, "topic", c.topic, producers,
                                            "its records would be judged by neither family",
                                            "give the compacted writer a topic of its own"):
            return refusal
        if drain_topics is not None and c.topic in drain_topics:
            return [(i, "topic", f"{c.topic!r} is in drain.topics: the final drain reads before "
                     "the cleaner has passed; this family reads its topic itself after",
                     f"remove {c.topic!r} from drain.topics")]
    return []


FACT_DOCS = {"compacted": "the scenario writes compacted topics"}


def facts(w) -> dict[str, bool | None]:
    return {"compacted": bool(getattr(w, "compacted", ()))}
