"""The pipeline family's scenario section: `workload.pipelines`, and the rules that tie a
pipeline to the scenario's topics and producers.

    pipelines:
      - name: pl0                    # default pl<i>; its instances are <name>i0, <name>i1 …
        input_topic: orders          # written by a producer of the workload
        output_topic: counts         # co-partitioned: as many partitions as the input
        instances: 2
        processing: exactly_once     # exactly_once | at_least_once
        state: per_key_count         # per_key_count (needs keyed inputs) | none
        client: librdkafka           # librdkafka | java (Kafka's clients) | streams (Kafka Streams)
        streams_protocol: classic    # client streams: classic | streams (KIP-1071, Kafka 4.2+)
        records_per_txn: 100         # a transaction (or an at-least-once commit) holds
        commit_interval_ms: 100      # at most this many inputs, or this long
        transaction_timeout_ms: 10000
        churn: {every_s: 15, how: kill, down_s: 2}
        client_config: {linger.ms: "5"}

The builder (harness/scenario/build.py) calls `pipeline` per item and `check_pipelines`
once the topics and producers are known; every refusal names its field.
"""
from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from core.errors import SpecError
from workloads.spec import ChurnSpec, named, written_by_a_producer

# settings the processor sets itself (its isolation, its group, its transactions)
REFUSED_CLIENT_KEYS = ("isolation.level", "group.id", "enable.auto.commit", "transactional.id",
                       "enable.idempotence", "acks", "partition.assignment.strategy",
                       "auto.offset.reset", "transaction.timeout.ms")
# and those the Java processor sets too (it reads and writes bytes)
REFUSED_JAVA_KEYS = ("key.serializer", "value.serializer", "key.deserializer",
                     "value.deserializer", "max.poll.records")
# and those Kafka Streams sets from the section (processing:, the group, its state, its
# serdes and its rebalance protocol); its clients' own settings pass through
REFUSED_STREAMS_KEYS = ("processing.guarantee", "application.id", "state.dir",
                        "num.stream.threads", "group.protocol", "commit.interval.ms",
                        "default.key.serde", "default.value.serde")
# KIP-1071: the streams rebalance protocol (group.protocol=streams) from Kafka 4.2
STREAMS_PROTOCOL_FIRST_LINE = (4, 2)
# KIP-447: sendOffsetsToTransaction(offsets, groupMetadata), which fences a processor
# that lost its partitions by the group's generation, is in the Java clients from 2.5
JAVA_FIRST_LINE = (2, 5)


class PipelineSpec(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")
    name: str
    input_topic: str
    output_topic: str
    instances: int = Field(2, ge=1, le=32)
    processing: Literal["exactly_once", "at_least_once"] = "exactly_once"
    state: Literal["per_key_count", "none"] = "per_key_count"
    client: Literal["librdkafka", "java", "streams"] = "librdkafka"
    streams_protocol: Literal["classic", "streams"] = "classic"
    group_id: str | None = None                 # default: the pipeline's name
    records_per_txn: int = Field(100, ge=1)
    commit_interval_ms: int = Field(100, ge=1)
    transaction_timeout_ms: int = Field(10000, ge=1000)
    session_timeout_ms: int = Field(10000, ge=6000)
    output_size: int = Field(100, ge=0)
    churn: ChurnSpec | None = None
    client_config: dict[str, str] = {}
    # the graceful stop waits until the group has committed every input (at most this long)
    catch_up_timeout_s: float = Field(60.0, gt=0)

    @field_validator("name")
    @classmethod
    def _name(cls, v: str) -> str:
        return named(v)

    @model_validator(mode="after")
    def _rules(self) -> "PipelineSpec":
        if self.streams_protocol != "classic" and self.client != "streams":
            raise SpecError("streams_protocol", f"is a Kafka Streams setting; this pipeline's "
                            f"client is {self.client}", "remove it, or set client: streams")
        if self.input_topic == self.output_topic:
            raise SpecError("output_topic", f"is the input topic {self.input_topic!r}: the "
                            "pipeline would read its own outputs", "write to another topic")
        for k in self.client_config:
            if k in REFUSED_CLIENT_KEYS:
                raise SpecError(f"client_config.{k}", f"{k} is set by the processor itself",
                                "remove it (processing: chooses the isolation and transactions)")
            if self.client == "java" and k in REFUSED_JAVA_KEYS:
                raise SpecError(f"client_config.{k}", f"{k} is set by the Java processor itself "
                                "(bytes in, bytes out; a poll batch is one transaction)",
                                "remove it (records_per_txn: sets the batch)")
            if self.client == "streams" and k in REFUSED_STREAMS_KEYS:
                raise SpecError(f"client_config.{k}", f"{k} is set by the Streams processor "
                                "from the pipeline's section", "remove it (processing:, "
                                "commit_interval_ms: and streams_protocol: set them)")
        return self

    @property
    def group(self) -> str:
        return self.group_id or self.name

    @property
    def instance_names(self) -> list[str]:
        return [f"{self.name}i{i}" for i in range(self.instances)]


def pipeline(i: int, raw: dict[str, Any]) -> PipelineSpec:
    """An item of workload.pipelines with its defaults (a SpecError names its field)."""
    return PipelineSpec(**{"name": f"pl{i}", **raw})


def check_pipelines(pipelines, topics: dict[str, int], producers) -> list[tuple[int, str, str, str]]:
    """The rules across sections: (index, field, problem, fix) of the first refusal, or [].
    `topics`: name -> partitions; `producers`: the workload's (librdkafka) producers."""
    for i, p in enumerate(pipelines):
        for field in ("input_topic", "output_topic"):
            name = getattr(p, field)
            if name not in topics:
                return [(i, field, f"topic {name!r} is not among the scenario's topics",
                         f"use one of {', '.join(topics)}, or add it under topics:")]
        if topics[p.output_topic] != topics[p.input_topic]:
            return [(i, "output_topic", f"has {topics[p.output_topic]} partitions, the input "
                     f"{topics[p.input_topic]}: an output goes to its input's partition number "
                     "(co-partitioned, so a key's count lives in one output partition)",
                     "give both topics the same number of partitions")]
        writers = [q for q in producers if q.topic == p.input_topic]
        if not writers:
            return [(i, "input_topic", f"no producer writes {p.input_topic!r}",
                     "add a producer with that topic")]
        if p.state == "per_key_count" and any(q.keys == "none" for q in writers):
            return [(i, "state", "a per-key count needs keyed inputs; a producer of "
                     f"{p.input_topic!r} writes keys: none", "set keys: fixed on its producer, "
                     "or state: none")]
        for j, other in enumerate(pipelines[:i]):
            if p.output_topic in (other.output_topic, other.input_topic) or \
                    other.output_topic == p.input_topic:
                return [(i, "output_topic", f"pipeline {other.name!r} reads or writes it too",
                         "give each pipeline topics of its own")]
            if p.name == other.name or p.group == other.group:
                return [(i, "name", f"{p.name!r} (group {p.group!r}) is pipeline {j}'s too",
                         "give each pipeline its own name")]
        if refusal := written_by_a_producer(
                i, "output_topic", p.output_topic, producers,
                "the drained output log would mix its records with the pipeline's",
                "give the pipeline an output topic of its own"):
            return refusal
    return []


def _line(version: str) -> tuple[int, int]:
    major, minor = (int(x) for x in version.split(".")[:2])
    return major, minor


def check_client(p: PipelineSpec, clients_version: str, brokers_version: str | None = None) -> None:
    """The rules that need the clients' version (workload.clients_version, else the
    brokers') and the brokers': a SpecError naming `client` or `streams_protocol`."""
    major, minor = _line(clients_version)
    if p.client == "java" and (major, minor) < JAVA_FIRST_LINE:
        raise SpecError("client", f"the Java processor commits its input offsets with "
                        f"sendOffsetsToTransaction(offsets, groupMetadata) (KIP-447, Kafka "
                        f"clients 2.5+); the clients are {clients_version}",
                        "set workload.clients_version 3.6 or later")
    if p.client == "streams" and p.streams_protocol == "streams" and \
            (major, minor) < STREAMS_PROTOCOL_FIRST_LINE:
        raise SpecError("streams_protocol", f"the streams rebalance protocol (KIP-1071, "
                        f"group.protocol=streams) is in Kafka Streams 4.2+; the clients are "
                        f"{clients_version}", "set streams_protocol: classic, or run Kafka "
                        "4.2 or later (cluster.version or workload.clients_version)")
    if p.client == "streams" and p.streams_protocol == "streams" and brokers_version and \
            _line(brokers_version) < STREAMS_PROTOCOL_FIRST_LINE:
        raise SpecError("streams_protocol", f"the streams rebalance protocol (KIP-1071) needs "
                        f"brokers 4.2+ (their streams group coordinator); the brokers are "
                        f"{brokers_version}", "set streams_protocol: classic, or cluster.version "
                        "4.2 or later")


FACT_DOCS = {"pipelines": "the scenario has pipelines (read, transform, write)",
             "pipeline_exactly_once": "every pipeline runs exactly_once "
                                      "(None when there is no pipeline)",
             "pipeline_churned": "a pipeline's instances are churned (workload.pipelines[].churn), "
                                 "so its tasks are meant to move with their state"}


def facts(w) -> dict[str, bool | None]:
    pipes = getattr(w, "pipelines", ())
    return {"pipelines": bool(pipes),
            "pipeline_exactly_once": all(p.processing == "exactly_once" for p in pipes)
            if pipes else None,
            "pipeline_churned": any(p.churn is not None for p in pipes)}


def transactional_id_of(run_id: str, slot: str) -> str:
    """The transactional.id of an exactly-once instance slot of librdkafka's or Java's
    processor (its replacements keep it, to fence the one they replace); Kafka Streams
    chooses its own."""
    return f"{run_id}-{slot}"
