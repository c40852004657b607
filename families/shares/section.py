"""The share-group family's scenario section: `workload.share_groups`, and the rules
that tie it to the cluster (versions, broker configs, lock bounds).

    share_groups:
      - group_id: orders-2            # default sg<i>
        topics: [orders]              # default: the first topic
        members: 6
        client: librdkafka            # librdkafka | java (Kafka's KafkaShareConsumer)
        ack_mode: explicit            # implicit (Kafka's default) | explicit
        release_rate: 0.05            # explicit only
        reject_rate: 0.01
        processing_ms: 2
        churn: {every_s: 12, how: kill}
        configs: {share.record.lock.duration.ms: 15000}   # group configs, set before load

The builder (harness/scenario/build.py) calls `share_group` per item and
`check_on_cluster` once the cluster is known; every refusal names its field.
"""
from __future__ import annotations

import difflib
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationInfo, field_validator, model_validator

from core.errors import SpecError
from workloads.spec import ChurnSpec, fraction

# Kafka's share group configs (IncrementalAlterConfigs on a GROUP resource), by the
# line that introduced them (kafka.apache.org/4x/configuration/group-configs).
GROUP_CONFIGS: dict[tuple[int, int], tuple[str, ...]] = {
    (4, 1): ("share.auto.offset.reset", "share.heartbeat.interval.ms", "share.isolation.level",
             "share.record.lock.duration.ms", "share.session.timeout.ms"),
    (4, 3): ("share.assignment.interval.ms", "share.delivery.count.limit",   # KIP-1240
             "share.partition.max.record.locks", "share.renew.acknowledge.enable"),
}
FIRST_LINE = (4, 1)        # a preview there (share.version=1, which the harness enables)
LOCK_DEFAULT_MS, LOCK_MIN_MS, LOCK_MAX_MS = 30000, 15000, 60000    # the brokers' defaults
DELIVERY_LIMIT_DEFAULT = 5
# settings a share consumer refuses, or that the section sets itself
REFUSED_CLIENT_KEYS = ("auto.offset.reset", "enable.auto.commit", "group.instance.id",
                       "session.timeout.ms", "isolation.level", "partition.assignment.strategy",
                       "share.acknowledgement.mode", "group.id")


class ShareGroupSpec(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")
    group_id: str
    topics: tuple[str, ...]
    members: int = Field(3, ge=1, le=64)
    name_prefix: str = "s"
    client: Literal["librdkafka", "java"] = "librdkafka"
    ack_mode: Literal["implicit", "explicit"] = "implicit"
    release_rate: float = 0.0
    reject_rate: float = 0.0
    processing_ms: float = Field(0.0, ge=0)
    ack_send: Literal["poll", "sync", "async"] = "async"
    max_poll_records: int = Field(100, ge=1)
    churn: ChurnSpec | None = None
    configs: dict[str, str] = {}
    client_config: dict[str, str] = {}
    # the final drain stops once every acked record is settled (at least the lock + 5 s
    # in), else after this long with nothing new (default: the group's session timeout
    # + the lock + 5 s; families/shares/drain.py)
    drain_quiet_s: float | None = None
    drain_timeout_s: float = Field(180.0, gt=0)
    # resolved by the builder from the group's configs and the cluster's
    lock_ms: int = LOCK_DEFAULT_MS
    delivery_count_limit: int = DELIVERY_LIMIT_DEFAULT

    @field_validator("release_rate", "reject_rate")
    @classmethod
    def _fraction(cls, v: float, info: ValidationInfo) -> float:
        return fraction(v, info.field_name)

    @model_validator(mode="after")
    def _rates(self) -> "ShareGroupSpec":
        rates = self.release_rate + self.reject_rate
        if rates > 1:
            raise SpecError("release_rate", f"release_rate + reject_rate is {rates:g}",
                            "keep their sum at most 1")
        if rates and self.ack_mode == "implicit":
            raise SpecError("release_rate" if self.release_rate else "reject_rate",
                            "needs ack_mode: explicit (implicit mode accepts everything)",
                            "set ack_mode: explicit, or remove the rate")
        for k in self.client_config:
            if k in REFUSED_CLIENT_KEYS:
                raise SpecError(f"client_config.{k}", f"{k} is not a share consumer setting",
                                "remove it (ack_mode sets share.acknowledgement.mode; group "
                                "configs go under configs:)")
        return self

    @property
    def member_names(self) -> list[str]:
        return [f"{self.name_prefix}{i}" for i in range(self.members)]


def share_group(i: int, raw: dict[str, Any], first_topic: str) -> ShareGroupSpec:
    """An item of workload.share_groups with its defaults (a SpecError names its field)."""
    raw = {"group_id": f"sg{i}", "topics": [first_topic],
           "name_prefix": "s" if i == 0 else f"sg{i}s", **raw}
    raw["configs"] = {"share.auto.offset.reset": "earliest", **(raw.get("configs") or {})}
    return ShareGroupSpec(**raw)


def _line(version: str) -> tuple[int, int]:
    major, minor = version.split(".")[:2]
    return int(major), int(minor)


def _known_configs(line: tuple[int, int]) -> list[str]:
    return [k for since, keys in GROUP_CONFIGS.items() if line >= since for k in keys]


def check_on_cluster(g: ShareGroupSpec, version: str, kraft: bool, broker_config: dict[str, str],
                     clients_version: str | None) -> ShareGroupSpec:
    """The rules that need the cluster: the version (and KRaft), the group configs the
    line knows, the lock's bounds; the group with its lock and delivery limit resolved."""
    line = _line(version)
    if line < FIRST_LINE:
        raise SpecError("", f"share groups (KIP-932) need Kafka 4.1 or later (4.1: a preview "
                        f"the harness enables with share.version=1; 4.2+: production-ready); "
                        f"the cluster runs {version}", "set cluster.version: 4.2 or later")
    if not kraft:
        raise SpecError("", "share groups need KRaft (ZooKeeper mode ends with 3.9)",
                        "use cluster.mode kraft-combined or kraft-isolated")
    if g.client == "java" and clients_version is not None and _line(clients_version) < FIRST_LINE:
        raise SpecError("client", f"Kafka's Java share consumer speaks the share RPCs from 4.1; "
                        f"workload.clients_version is {clients_version}",
                        "set workload.clients_version 4.1 or later")
    _check_configs(g, line, version)
    lo = int(broker_config.get("group.share.min.record.lock.duration.ms", LOCK_MIN_MS))
    hi = int(broker_config.get("group.share.max.record.lock.duration.ms", LOCK_MAX_MS))
    lock = int(g.configs.get("share.record.lock.duration.ms",
                             broker_config.get("group.share.record.lock.duration.ms", LOCK_DEFAULT_MS)))
    if not lo <= lock <= hi:
        raise SpecError("configs.share.record.lock.duration.ms",
                        f"{lock} ms is outside the brokers' bounds [{lo}, {hi}] "
                        "(group.share.min/max.record.lock.duration.ms)",
                        f"use a value from {lo} to {hi}, or change the bounds under cluster.config")
    batch_s = g.processing_ms * g.max_poll_records / 1000
    if batch_s * 1000 >= lock:
        raise SpecError("processing_ms", f"a batch takes {batch_s:g} s to process, not less than "
                        f"the {lock / 1000:g} s lock: every record would expire",
                        "lower processing_ms or max_poll_records")
    limit = int(g.configs.get("share.delivery.count.limit",
                              broker_config.get("group.share.delivery.count.limit",
                                                DELIVERY_LIMIT_DEFAULT)))
    return g.model_copy(update={"lock_ms": lock, "delivery_count_limit": limit})


def _check_configs(g: ShareGroupSpec, line: tuple[int, int], version: str) -> None:
    known = _known_configs(line)
    for name, value in g.configs.items():
        if name == "share.delivery.count.limit" and line < (4, 3):
            raise SpecError(f"configs.{name}", f"is a group config from Kafka 4.3 (KIP-1240); "
                            f"the cluster runs {version}",
                            "set the broker config group.share.delivery.count.limit under cluster.config")
        if name not in known:
            near = difflib.get_close_matches(name, known, n=1)
            hint = f"did you mean {near[0]!r}? " if near else ""
            raise SpecError(f"configs.{name}", f"unknown share group config {name!r} on Kafka {version}",
                            f"{hint}use one of {', '.join(known)}; broker configs (group.share.*) "
                            "go under cluster.config")
        if name == "share.auto.offset.reset" and value != "earliest":
            raise SpecError(f"configs.{name}", f"{value!r}: the checker expects every acknowledged "
                            "record to be delivered, which only earliest makes so",
                            "remove it (earliest is set for you)")


FACT_DOCS = {"share_groups": "the scenario has share groups (KIP-932)",
             "share_explicit": "every share group acknowledges explicitly "
                               "(None when there is no share group)",
             "share_churned": "a share group's members are churned "
                              "(workload.share_groups[].churn)"}


def facts(w) -> dict[str, bool | None]:
    groups = getattr(w, "share_groups", ())
    return {"share_groups": bool(groups),
            "share_explicit": all(g.ack_mode == "explicit" for g in groups) if groups else None,
            "share_churned": any(g.churn is not None for g in groups)}
