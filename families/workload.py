"""The scenario's `workload:` section: each family's part of it in one model (the
records family's producers and consumer groups, Kafka's Java clients; the shares
family's share groups; the pipeline family's pipelines; the compacted family's writers). A family's own rules and
facts live in its section module.
"""
from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

from families.compacted.section import CompactedSpec
from families.mirror.section import MirrorSpec
from families.pipelines.section import PipelineSpec
from families.records.section import JavaConsumerSpec, JavaProducerSpec
from families.shares.section import ShareGroupSpec
from workloads.spec import ConsumerGroupSpec, ProducerSpec


class Workload(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid", arbitrary_types_allowed=True)
    duration_s: float = 60.0
    warmup_timeout_s: float = 60.0          # until every partition has its first ack
    # The load ends this long after the fault timeline is done and every fault healed,
    # if that comes before duration_s: a migration or a rolling upgrade takes what it
    # takes (85 s on a quiet machine, 157 s on a loaded one), and the load need not run
    # a fixed guess long past it. None: the load runs duration_s.
    end_after_faults_s: float | None = Field(None, gt=0)
    # Kafka's Java Verifiable clients run this version's jars (a line or exact version);
    # None: the brokers' version, as the cluster started.
    clients_version: str | None = None
    producers: tuple[ProducerSpec, ...] = ()
    consumers: tuple[ConsumerGroupSpec, ...] = ()
    java_producers: tuple[JavaProducerSpec, ...] = ()
    java_consumers: tuple[JavaConsumerSpec, ...] = ()
    share_groups: tuple[ShareGroupSpec, ...] = ()       # the shares family's (families/shares)
    pipelines: tuple[PipelineSpec, ...] = ()            # the pipeline family's (families/pipelines)
    compacted: tuple[CompactedSpec, ...] = ()           # the compacted family's (families/compacted)
    mirror: MirrorSpec | None = None                    # the mirror family's (families/mirror)
