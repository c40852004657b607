"""The mirror family's scenario section: `workload.mirror`, MirrorMaker 2 replicating the
scenario's topics from the run's cluster (the source) to a second cluster (the target).

    mirror:
      target:                       # the target cluster: started beside the source
        version: "3.9"              # default: the source's version
        brokers: 1                  # KRaft combined nodes (1 to 3)
        heap_mb: 256                # per broker: small, two clusters share the machine
        log_dir_size_mb: 256
      topics: [orders]              # default: every topic the producers write
      exactly_once: false           # MM2's exactly-once source support (KIP-618; dedicated
                                    # MM2 needs KIP-710's internal REST: Kafka 3.5+)
      emit_checkpoints_interval_s: 5
      sync_group_offsets: true      # the group offset sync to the target
      heap_mb: 256                  # MirrorMaker 2's JVM
      catch_up_timeout_s: 120       # the drain's bound on its wait for MM2 to catch up
      failover: false               # at the drain, the scenario's consumer groups fail over
                                    # to the target: where MM2's group offset sync puts each
                                    # is recorded beside its last source commit, and the
                                    # group reads the target from there (failover.py)
      link_proxy: false             # MM2 reaches the source's brokers through a toxiproxy
                                    # of its own (its connections DNATed to it in its
                                    # network namespace): what a `link-latency` fault delays
      kill: {at_s: 8, down_s: 5}    # MM2 killed (SIGKILL) at_s after it has created the
                                    # mirrored topics (it copies from then on), started
                                    # again down_s later (default: never)
      mm2_config:                   # MM2 properties of the user's, set over the harness's;
        target.scheduled.rebalance.max.delay.ms: 0   # its Connect worker's: target.<key>

MirrorMaker 2 runs in dedicated mode from the Kafka image of the target's version (the
usual place: beside the cluster it writes to; its Connect worker's internal topics and,
with exactly_once, its transactions are the target's). Its topics are named by the
default replication policy, `source.<topic>`: a mirrored copy is never a topic of the
same name, so the records family, which judges the source's topics, never mistakes a
copy for its own record read twice (families/mirror/__init__.py).

The builder (harness/scenario/build.py) calls `mirror` then `check_mirror` once the
topics, producers and the source cluster are known; every refusal names its field.
"""
from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field, field_validator

from clusters.spec import ClusterSpec
from clusters.versions import resolve_version
from core.errors import SpecError
from workloads.spec import topics_read_by_group

SOURCE, TARGET = "source", "target"            # MM2's cluster aliases; consumed.cluster
# dedicated MM2 with exactly-once source support (KIP-618) needs KIP-710's internal REST
EXACTLY_ONCE_SINCE = (3, 5)
# the family's events: its configuration (when MM2 starts) and the drain's catch-up wait
CONFIG_EVENT = "mirror-config"
CAUGHT_UP_EVENT = "mirror-caught-up"
FAILOVER_EVENT = "mirror-failover"
KILL_EVENT, RESTART_EVENT = "mirror-mm2-killed", "mirror-mm2-restarted"


def target_topic(topic: str) -> str:
    """The mirrored topic's name on the target (DefaultReplicationPolicy: `<alias>.<topic>`)."""
    return f"{SOURCE}.{topic}"


class TargetSpec(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")
    version: str | None = None
    brokers: int = Field(1, ge=1, le=3)
    heap_mb: int = Field(256, ge=192, le=2048)
    log_dir_size_mb: int = Field(256, ge=64, le=4096)

    @field_validator("version", mode="before")
    @classmethod
    def _version(cls, v: Any) -> Any:
        return None if v is None else str(v)

    def cluster(self, source_version: str) -> ClusterSpec:
        """The target as a ClusterSpec: KRaft combined, named `target` (its network and
        containers kh-<run>-target…), replication settings fitting its size."""
        n = self.brokers
        spec = ClusterSpec.kraft_combined(self.version or source_version, nodes=n)
        return (spec.with_name(TARGET).with_heap(self.heap_mb)
                .with_log_dir_size(self.log_dir_size_mb)
                .with_config(**{"offsets.topic.replication.factor": n,
                                "transaction.state.log.replication.factor": n,
                                "transaction.state.log.min.isr": min(n, 2),
                                "default.replication.factor": n}))


class MirrorKill(BaseModel):
    """MirrorMaker 2 killed once and started again: what an operator's restart after a
    crash does (the same configuration; its offsets in the target's internal topic).
    The family's own, as a pipeline's churn is: the fault catalog has no MM2 target yet."""
    model_config = ConfigDict(frozen=True, extra="forbid")
    at_s: float = Field(8.0, ge=0)
    down_s: float = Field(5.0, ge=0)


# Settings of the Connect worker a dedicated MM2 runs: it builds that worker's configuration
# from the target cluster's properties, so one of these without the `target.` prefix is
# silently not applied (seen: scheduled.rebalance.max.delay.ms, RESULTS issue 38).
WORKER_KEYS = frozenset({"scheduled.rebalance.max.delay.ms", "rebalance.timeout.ms",
                         "connect.protocol", "worker.sync.timeout.ms", "worker.unsync.backoff.ms",
                         "heartbeat.interval.ms", "session.timeout.ms"})


def mm2_owned(key: str) -> bool:
    """An MM2 property the harness sets for what the run mirrors, from where to where:
    not the user's to change (mm2_config)."""
    flow_keys = (".enabled", ".topics", ".groups", ".topics.exclude", ".groups.exclude")
    return (key in {"clusters", "topics", "groups", "listeners"} or key.endswith("bootstrap.servers")
            or ("->" in key and key.endswith(flow_keys)))


class MirrorSpec(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")
    target: TargetSpec = TargetSpec()
    topics: tuple[str, ...] | None = None
    exactly_once: bool = False
    emit_checkpoints_interval_s: float = Field(5.0, gt=0, le=600)
    sync_group_offsets: bool = True
    heap_mb: int = Field(256, ge=128, le=2048)
    catch_up_timeout_s: float = Field(120.0, gt=0)
    kill: MirrorKill | None = None
    failover: bool = False
    link_proxy: bool = False
    mm2_config: dict[str, str] = {}
    # resolved by the builder: the source's exact version
    source_version: str = ""

    @field_validator("topics", mode="before")
    @classmethod
    def _topics(cls, v: Any) -> Any:
        if v is None:
            return v
        if isinstance(v, str) or not isinstance(v, list | tuple) or not v:
            raise SpecError("topics", f"{v!r} is not a list of topics", "write [orders, …]")
        return tuple(str(t) for t in v)

    @field_validator("mm2_config", mode="before")
    @classmethod
    def _mm2_config(cls, v: Any) -> Any:
        if v is None:
            return {}
        if not isinstance(v, dict):
            raise SpecError("mm2_config", f"{v!r} is not a mapping of MM2 properties",
                            "write mm2_config: {target.scheduled.rebalance.max.delay.ms: 0}")
        out = {}
        for key, value in v.items():
            if mm2_owned(str(key)):
                raise SpecError(f"mm2_config.{key}", "is set by the harness: it says which clusters "
                                "and topics the run mirrors, and where",
                                "use target: and topics: instead, or remove it")
            if str(key) in WORKER_KEYS:
                raise SpecError(f"mm2_config.{key}", "is a setting of MM2's Connect worker, which "
                                "takes its settings from the target cluster's: without the "
                                "prefix MM2 does not apply it", f"write target.{key}")
            if isinstance(value, dict | list | tuple) or value is None:
                raise SpecError(f"mm2_config.{key}", f"{value!r} is not a single value",
                                "write a number, a word or true/false")
            out[str(key)] = str(value).lower() if isinstance(value, bool) else str(value)
        return out

    @property
    def target_version(self) -> str:
        return resolve_version(self.target.version or self.source_version).version

    @property
    def mirrored(self) -> tuple[str, ...]:
        return self.topics or ()


def mirror(raw: dict[str, Any]) -> MirrorSpec:
    """workload.mirror with its defaults (a SpecError names its field)."""
    if not isinstance(raw, dict):
        raise SpecError("(spec)", "must be a mapping", "write mirror: {target: {brokers: 1}}")
    return MirrorSpec(**raw)


def exactly_once_refusal(version_key: tuple[int, ...], version: str) -> tuple[str, str] | None:
    """(problem, fix) when a MirrorMaker 2 of this version cannot run exactly-once, else None."""
    if version_key >= EXACTLY_ONCE_SINCE:
        return None
    return (f"MirrorMaker 2 {version} has no exactly-once support in dedicated mode "
            "(KIP-618 with KIP-710's internal REST: Kafka 3.5+)",
            "set target.version to 3.5 or later, or exactly_once: false")


def check_mirror(spec: MirrorSpec, source: ClusterSpec, topics: dict[str, int],
                 producers) -> tuple[MirrorSpec, list[tuple[tuple, str, str]]]:
    """The section resolved (its source version, its topics) and the first refusal as
    (path below workload.mirror, problem, fix), or []. `topics`: name -> partitions;
    `producers`: the records family's."""
    if source.external is not None:
        return spec, [((), "a mirror from an external cluster is not supported: the harness "
                       "attaches MirrorMaker 2 to the source's Docker network",
                       "run the source on a cluster the harness starts")]
    spec = spec.model_copy(update={"source_version": source.kafka.version})
    try:
        target = spec.target.cluster(source.version)
    except SpecError as e:
        return spec, [(("target", e.field), e.problem, e.fix or "")]
    if spec.topics is None:
        written = tuple(dict.fromkeys(p.topic for p in producers))
        spec = spec.model_copy(update={"topics": written})
    for i, t in enumerate(spec.mirrored):
        if t not in topics:
            return spec, [(("topics", i), f"topic {t!r} is not among the scenario's topics",
                           f"use one of {', '.join(topics)}")]
    if not spec.mirrored:
        return spec, [(("topics",), "no topic to mirror (no producer writes one)",
                       "name the topics: topics: [orders]")]
    if spec.exactly_once:
        refusal = exactly_once_refusal(target.kafka.key, target.kafka.version)
        if refusal is not None:
            return spec, [(("exactly_once",), *refusal)]
    return spec, []


FACT_DOCS = {"mirror": "the scenario mirrors topics with MirrorMaker 2",
             "mirror_exactly_once": "MirrorMaker 2 runs with exactly-once support (KIP-618)",
             "mirror_translates": "a consumer group reads a mirrored topic, so MirrorMaker 2 "
                                  "has its offsets to checkpoint"}


def facts(w) -> dict[str, bool | None]:
    m = getattr(w, "mirror", None)
    return {"mirror": m is not None, "mirror_exactly_once": bool(m and m.exactly_once),
            "mirror_translates": m is not None and _a_group_reads(w, m.topics)}


def _a_group_reads(w, mirrored: tuple[str, ...] | None) -> bool:
    """Whether a consumer group of the workload reads one of the mirrored topics (None:
    every topic is mirrored)."""
    read = set().union(*topics_read_by_group(w).values())
    return bool(read if mirrored is None else read & set(mirrored))
