"""ClusterSpec: what cluster to build, as data, validated before anything starts.

Build one with the fluent constructors:

    ClusterSpec.kraft_combined("3.9").with_config(**{"min.insync.replicas": "2"})
    ClusterSpec.kraft_isolated("4", brokers=3, controllers=1)
    ClusterSpec.zookeeper("3.9", brokers=3, zookeepers=1).with_broker_config(1, {"log.retention.ms": "-1"})

Every constructor returns a validated, frozen spec; an impossible spec raises
SpecError naming the field and the fix.
"""
from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from clusters.external_spec import ExternalSpec
from clusters.log_levels import check_log_levels
from clusters.versions import (
    DEFAULT_VERSION,
    DYNAMIC_QUORUM,
    ELR,
    SHARE_GROUPS,
    TRANSACTION_VERSION,
    KafkaVersion,
    all_versions,
    resolve_version,
)
from core.errors import SpecError

KRAFT_COMBINED = "kraft-combined"
KRAFT_ISOLATED = "kraft-isolated"
ZOOKEEPER = "zookeeper"
MODES = (KRAFT_COMBINED, KRAFT_ISOLATED, ZOOKEEPER)

TOXIPROXY_OFF = "off"
TOXIPROXY_CLIENT = "client"            # client listener advertised through toxiproxy
TOXIPROXY_ALL = "client+replication"   # and the inter-broker listener too
TOXIPROXY_MODES = (TOXIPROXY_OFF, TOXIPROXY_CLIENT, TOXIPROXY_ALL)

MAX_BROKERS = 5

SECURITY_NONE = "none"
SASL_SSL = "sasl_ssl"           # SCRAM-SHA-512 over TLS, per-cluster CA (clusters/security.py)
SECURITY_MODES = (SECURITY_NONE, SASL_SSL)


def _as_props(values: Mapping[str, Any], field_name: str) -> tuple[tuple[str, str], ...]:
    out = []
    for k, v in values.items():
        if not isinstance(k, str) or not k or any(c in k for c in "\n= "):
            raise SpecError(field_name, f"invalid server.properties key {k!r}",
                            "use a plain key such as 'min.insync.replicas'")
        if isinstance(v, bool):
            v = "true" if v else "false"
        out.append((k, str(v)))
    return tuple(sorted(out))


def _int_prop(props: Mapping[str, str], key: str, field_name: str) -> int | None:
    if key not in props:
        return None
    try:
        return int(props[key])
    except ValueError:
        raise SpecError(f"{field_name}.{key}", f"{props[key]!r} is not an integer",
                        f"set {key} to a whole number") from None


def _toxiproxy_from_yaml(kw: dict[str, Any]) -> dict[str, Any]:
    """YAML 1.1 reads a bare `off` (and `no`, `false`) as False, `on`/`yes`/`true` as True."""
    value = kw.get("toxiproxy")
    if value is False:
        return {**kw, "toxiproxy": TOXIPROXY_OFF}
    if value is True:
        # "on" does not say which listeners go through toxiproxy: name the choices.
        raise SpecError("cluster.toxiproxy", "true (YAML reads on, yes and true so) does not say which listeners",
                        f"write {TOXIPROXY_CLIENT} (clients through toxiproxy) or {TOXIPROXY_ALL} "
                        "(clients and replication), or off")
    return kw


@dataclass(frozen=True)
class ClusterSpec:
    mode: str = KRAFT_COMBINED
    version: str = DEFAULT_VERSION
    brokers: int = 3                 # combined mode: number of broker+controller nodes
    controllers: int = 1             # isolated mode only
    zookeepers: int = 1              # ZooKeeper mode only
    name: str = "kafka"
    config: tuple[tuple[str, str], ...] = ()                 # every broker
    broker_config: tuple[tuple[int, tuple[tuple[str, str], ...]], ...] = ()  # by broker id
    heap_mb: int = 512
    log_dir_size_mb: int = 512
    toxiproxy: str = TOXIPROXY_OFF
    labels: tuple[tuple[str, str], ...] = field(default=())
    # Eligible leader replicas (KIP-966, 4.0+): None keeps the line's default for a new
    # cluster (off in 4.0, on from 4.1); true/false formats the cluster with it on/off.
    eligible_leader_replicas: bool | None = None
    # A dynamic KRaft quorum (KIP-853, 3.9+): controllers found through
    # controller.quorum.bootstrap.servers and added or removed at run time
    # (faults controller-add, controller-remove) instead of a fixed voters list.
    dynamic_quorum: bool = False
    # Every listener secured: clients and brokers SASL_SSL (SCRAM-SHA-512), the KRaft
    # controller listener TLS with client certificates (clusters/security.py).
    security: str = SECURITY_NONE
    # A cluster the harness did not start (clusters/external_spec.py): only `version`
    # (what the scenario may assume of it) is read beside it.
    external: ExternalSpec | None = None
    # KIP-890 part 2 (4.0+): the transaction.version feature a new cluster is formatted
    # with; 2 turns transactions v2 on for clients that speak it (the 4.x Java client),
    # 1 holds every client at v1. None: the line's default (2 from 4.0).
    transaction_version: int | None = None
    # KIP-932 (4.1+): the share.version feature a new cluster is formatted with; 1 turns
    # share groups on (4.1 needs it: its default is 0), 0 keeps them off. None: the
    # line's default (1 from 4.2).
    share_version: int | None = None
    # Loggers set in each Kafka node's log4j configuration as it starts
    # (clusters/log_levels.py), e.g. {"kafka.coordinator.transaction": "DEBUG"}.
    log_levels: tuple[tuple[str, str], ...] = ()
    # Client links also go through the harness's Kafka protocol proxy
    # (clusters/protocol_proxy.py), behind toxiproxy: what fault `protocol` acts on.
    protocol_proxy: bool = False

    def __post_init__(self) -> None:
        self.validate()

    # ---- fluent constructors -------------------------------------------------
    @classmethod
    def kraft_combined(cls, version: str = DEFAULT_VERSION, nodes: int = 3) -> "ClusterSpec":
        return cls(mode=KRAFT_COMBINED, version=version, brokers=nodes)

    @classmethod
    def kraft_isolated(cls, version: str = DEFAULT_VERSION, brokers: int = 3,
                       controllers: int = 1) -> "ClusterSpec":
        return cls(mode=KRAFT_ISOLATED, version=version, brokers=brokers, controllers=controllers)

    @classmethod
    def zookeeper(cls, version: str = "3.9", brokers: int = 3, zookeepers: int = 1) -> "ClusterSpec":
        return cls(mode=ZOOKEEPER, version=version, brokers=brokers, zookeepers=zookeepers)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> "ClusterSpec":
        """From a scenario's `cluster:` mapping (YAML). Unknown keys are refused."""
        if not isinstance(data, Mapping):
            raise SpecError("cluster", "must be a mapping", "write `cluster:` as key: value pairs")
        if "external" in data:
            return cls._external(data)
        known = {f for f in cls.__dataclass_fields__}
        unknown = set(data) - known
        if unknown:
            raise SpecError(f"cluster.{sorted(unknown)[0]}", "unknown field",
                            f"use one of {sorted(known)}")
        kw = dict(data)
        if "config" in kw:
            kw["config"] = _as_props(kw["config"] or {}, "cluster.config")
        if "broker_config" in kw:
            kw["broker_config"] = tuple(sorted(
                (int(b), _as_props(p or {}, f"cluster.broker_config.{b}"))
                for b, p in (kw["broker_config"] or {}).items()))
        if "log_levels" in kw:
            kw["log_levels"] = _as_props(kw["log_levels"] or {}, "cluster.log_levels")
        if "labels" in kw:
            kw["labels"] = tuple(sorted((str(k), str(v)) for k, v in (kw["labels"] or {}).items()))
        kw = _toxiproxy_from_yaml(kw)
        if not isinstance(kw.get("protocol_proxy", False), bool):
            raise SpecError("cluster.protocol_proxy", f"{kw['protocol_proxy']!r}", "write true or false")
        if not isinstance(kw.get("dynamic_quorum", False), bool):
            raise SpecError("cluster.dynamic_quorum", f"{kw['dynamic_quorum']!r}", "write true or false")
        if kw.get("eligible_leader_replicas") not in (None, True, False):
            raise SpecError("cluster.eligible_leader_replicas", f"{kw['eligible_leader_replicas']!r}",
                            "write true or false (or leave it out for the line's default)")
        if kw.get("transaction_version") not in (None, 0, 1, 2):
            raise SpecError("cluster.transaction_version", f"{kw['transaction_version']!r}",
                            "write 1 (transactions v1) or 2 (v2), or leave it out")
        if kw.get("share_version") not in (None, 0, 1) or isinstance(kw.get("share_version"), bool):
            raise SpecError("cluster.share_version", f"{kw['share_version']!r}",
                            "write 1 (share groups on) or 0 (off), or leave it out for the "
                            "line's default (on from 4.2)")
        for key in ("brokers", "controllers", "zookeepers", "heap_mb", "log_dir_size_mb"):
            if key in kw and not isinstance(kw[key], int):
                raise SpecError(f"cluster.{key}", f"{kw[key]!r} is not an integer", "write a whole number")
        return cls(**kw)

    @classmethod
    def _external(cls, data: Mapping[str, Any]) -> "ClusterSpec":
        others = sorted(set(data) - {"external", "version", "name"})
        if others:
            raise SpecError(f"cluster.{others[0]}", "is not read for an external cluster",
                            "remove it: the harness neither starts nor configures that cluster")
        return cls(version=str(data.get("version", DEFAULT_VERSION)),
                   external=ExternalSpec.from_dict(data["external"]))

    def with_config(self, values: Mapping[str, Any] | None = None, **kw: Any) -> "ClusterSpec":
        merged = dict(self.config)
        merged.update(_as_props({**(values or {}), **kw}, "config"))
        return replace(self, config=tuple(sorted(merged.items())))

    def with_broker_config(self, broker_id: int, values: Mapping[str, Any]) -> "ClusterSpec":
        per = dict(self.broker_config)
        merged = dict(per.get(broker_id, ()))
        merged.update(_as_props(values, f"broker_config.{broker_id}"))
        per[broker_id] = tuple(sorted(merged.items()))
        return replace(self, broker_config=tuple(sorted(per.items())))

    def with_name(self, name: str) -> "ClusterSpec":
        return replace(self, name=name)

    def with_version(self, version: str) -> "ClusterSpec":
        return replace(self, version=version)

    def with_toxiproxy(self, mode: str = TOXIPROXY_CLIENT) -> "ClusterSpec":
        return replace(self, toxiproxy=mode)

    def with_log_dir_size(self, mb: int) -> "ClusterSpec":
        return replace(self, log_dir_size_mb=mb)

    def with_heap(self, mb: int) -> "ClusterSpec":
        return replace(self, heap_mb=mb)

    # ---- derived ---------------------------------------------------------------
    @property
    def kafka(self) -> KafkaVersion:
        return resolve_version(self.version)

    @property
    def uses_toxiproxy(self) -> bool:
        return self.toxiproxy != TOXIPROXY_OFF

    @property
    def secured(self) -> bool:
        return self.security != SECURITY_NONE

    @property
    def is_kraft(self) -> bool:
        return self.mode != ZOOKEEPER

    @property
    def elr_enabled(self) -> bool | None:
        """Whether eligible leader replicas are on (None: the line has no ELR)."""
        if not self.kafka.has(ELR):
            return None
        if self.eligible_leader_replicas is None:
            return self.kafka.release.elr_default
        return self.eligible_leader_replicas

    @property
    def share_groups_enabled(self) -> bool | None:
        """Whether a new cluster has share groups (share.version >= 1); None: the line has
        none (before 4.1)."""
        if not self.kafka.has(SHARE_GROUPS):
            return None
        if self.share_version is None:
            return self.kafka.release.share_default
        return self.share_version >= 1

    def broker_ids(self) -> list[int]:
        return list(range(1, self.brokers + 1))

    def controller_ids(self) -> list[int]:
        """KRaft voter ids (combined: the broker ids; isolated: 1001…)."""
        if self.mode == KRAFT_COMBINED:
            return self.broker_ids()
        if self.mode == KRAFT_ISOLATED:
            return list(range(1001, 1001 + self.controllers))
        return []

    def props_for(self, broker_id: int) -> dict[str, str]:
        """User overrides for one broker: cluster-wide, then per-broker."""
        props = dict(self.config)
        props.update(dict(dict(self.broker_config).get(broker_id, ())))
        return props

    def to_dict(self) -> dict[str, Any]:
        if self.external is not None:
            return {"version": self.version, "external": self.external.to_dict()}
        extra = {"security": self.security} if self.secured else {}
        # only when set: stored runs' manifests from before share groups stay byte-identical
        share = {"share_version": self.share_version} if self.share_version is not None else {}
        # only when set too, for the same reason
        proxy = {"protocol_proxy": True} if self.protocol_proxy else {}
        return {
            "mode": self.mode, "version": self.kafka.version, "brokers": self.brokers,
            "controllers": self.controllers if self.mode == KRAFT_ISOLATED else 0,
            "zookeepers": self.zookeepers if self.mode == ZOOKEEPER else 0,
            "name": self.name, "config": dict(self.config),
            "broker_config": {str(b): dict(p) for b, p in self.broker_config},
            "heap_mb": self.heap_mb, "log_dir_size_mb": self.log_dir_size_mb,
            "toxiproxy": self.toxiproxy, "eligible_leader_replicas": self.elr_enabled,
            "dynamic_quorum": self.dynamic_quorum, "transaction_version": self.transaction_version,
            "log_levels": dict(self.log_levels), **share, **proxy, **extra,
        }

    # ---- validation ------------------------------------------------------------
    def validate(self) -> None:
        if self.mode not in MODES:
            raise SpecError("mode", f"unknown mode {self.mode!r}", f"use one of {', '.join(MODES)}")
        kafka = resolve_version(self.version)
        if self.mode == ZOOKEEPER and not kafka.zookeeper:
            zk_versions = ", ".join(sorted(v.version for v in _zk_versions()))
            raise SpecError("mode", f"ZooKeeper mode does not exist in Kafka {kafka.version} "
                            "(removed in 4.0)", f"use mode kraft-combined/kraft-isolated, "
                            f"or version {zk_versions}")
        if self.eligible_leader_replicas is not None and not kafka.has(ELR):
            raise SpecError("eligible_leader_replicas", f"Kafka {kafka.version} has no eligible "
                            "leader replicas (KIP-966 arrived in 4.0)",
                            "remove it, or use version 4.0 or later")
        if self.transaction_version is not None and not kafka.has(TRANSACTION_VERSION):
            raise SpecError("transaction_version", f"Kafka {kafka.version} has no transaction.version "
                            "feature (KIP-890 part 2 arrived in 4.0)", "remove it, or use version 4.0 or later")
        if self.share_version is not None and not kafka.has(SHARE_GROUPS):
            raise SpecError("cluster.share_version", f"Kafka {kafka.version} has no share groups "
                            "(KIP-932's share.version feature arrived in 4.1; 4.0's early access is "
                            "not supported)", "remove it, or use version 4.1 or later")
        if self.dynamic_quorum and not (self.is_kraft and kafka.has(DYNAMIC_QUORUM)):
            raise SpecError("dynamic_quorum", f"a dynamic KRaft quorum (KIP-853) needs KRaft on 3.9 "
                            f"or later; this cluster is {self.mode} {kafka.version}",
                            "remove it, or use a KRaft mode and version 3.9 or later")
        if not 1 <= self.brokers <= MAX_BROKERS:
            raise SpecError("brokers", f"{self.brokers} brokers is out of range",
                            f"use 1 to {MAX_BROKERS} brokers")
        if self.mode == KRAFT_ISOLATED and self.controllers not in (1, 3):
            raise SpecError("controllers", f"{self.controllers} controllers",
                            "use 1 or 3 controllers (a KRaft quorum wants an odd size)")
        if self.mode == ZOOKEEPER and self.zookeepers not in (1, 3):
            raise SpecError("zookeepers", f"{self.zookeepers} ZooKeeper nodes",
                            "use 1 or 3 ZooKeeper nodes")
        if not 256 <= self.heap_mb <= 8192:
            raise SpecError("heap_mb", f"{self.heap_mb} MiB", "use 256 to 8192 MiB (512 is the default)")
        if not 16 <= self.log_dir_size_mb <= 65536:
            raise SpecError("log_dir_size_mb", f"{self.log_dir_size_mb} MiB",
                            "use 16 to 65536 MiB")
        if self.security not in SECURITY_MODES:
            raise SpecError("security", f"unknown value {self.security!r}",
                            f"use one of {', '.join(SECURITY_MODES)}")
        if self.toxiproxy not in TOXIPROXY_MODES:
            raise SpecError("toxiproxy", f"unknown value {self.toxiproxy!r}",
                            f"use one of {', '.join(TOXIPROXY_MODES)}")
        if self.protocol_proxy and self.toxiproxy == TOXIPROXY_OFF:
            raise SpecError("protocol_proxy", "the protocol proxy sits behind toxiproxy's client "
                            "proxies, and this cluster has none",
                            "set cluster.toxiproxy: client (or client+replication)")
        if self.protocol_proxy and self.security != SECURITY_NONE:
            raise SpecError("protocol_proxy", "the protocol proxy reads requests in the clear; "
                            "a secured cluster's client links are TLS",
                            "remove cluster.security, or protocol_proxy")
        check_log_levels(self.log_levels, "log_levels")
        for b, _ in self.broker_config:
            if b not in self.broker_ids():
                raise SpecError(f"broker_config.{b}", f"there is no broker {b}",
                                f"use a broker id from 1 to {self.brokers}")
        for b in self.broker_ids():
            self._validate_props(self.props_for(b),
                                 "config" if not dict(self.broker_config).get(b) else f"broker_config.{b}")

    def _validate_props(self, props: Mapping[str, str], where: str) -> None:
        for reserved in ("node.id", "broker.id", "process.roles", "listeners",
                         "advertised.listeners", "controller.quorum.voters", "log.dirs",
                         "zookeeper.connect"):
            if reserved in props:
                raise SpecError(f"{where}.{reserved}", "is set by the harness from the topology",
                                "remove it; change the topology fields instead")
        rf = _int_prop(props, "default.replication.factor", where)
        min_isr = _int_prop(props, "min.insync.replicas", where)
        for key in ("default.replication.factor", "offsets.topic.replication.factor",
                    "transaction.state.log.replication.factor",
                    "share.coordinator.state.topic.replication.factor"):
            value = _int_prop(props, key, where)
            if value is not None and value > self.brokers:
                raise SpecError(f"{where}.{key}", f"{value} is more than the {self.brokers} brokers",
                                f"use at most {self.brokers} or add brokers")
        if min_isr is not None:
            limit = rf if rf is not None else self.brokers
            if min_isr > limit:
                what = "default.replication.factor" if rf is not None else "number of brokers"
                raise SpecError(f"{where}.min.insync.replicas",
                                f"{min_isr} is more than the {what} ({limit}): no write could succeed",
                                f"use at most {limit}")
            if min_isr < 1:
                raise SpecError(f"{where}.min.insync.replicas", f"{min_isr}", "use 1 or more")


def _zk_versions() -> list[KafkaVersion]:
    return [v for v in all_versions() if v.zookeeper]


def validate_topic(spec: ClusterSpec, name: str, partitions: int, replication_factor: int,
                   configs: Mapping[str, str] | None) -> None:
    """Refuse an impossible topic before asking Kafka (same rules as the spec)."""
    if not name or len(name) > 249 or not all(c.isalnum() or c in "._-" for c in name):
        raise SpecError("topic.name", f"invalid topic name {name!r}",
                        "use letters, digits, '.', '_' and '-' (at most 249)")
    if partitions < 1:
        raise SpecError("topic.partitions", f"{partitions}", "use 1 or more partitions")
    if spec.external is not None and replication_factor < 1:
        raise SpecError("topic.replication_factor", f"{replication_factor}", "use 1 or more")
    if spec.external is None and not 1 <= replication_factor <= spec.brokers:
        raise SpecError("topic.replication_factor",
                        f"{replication_factor} is more than the {spec.brokers} brokers"
                        if replication_factor > spec.brokers else f"{replication_factor}",
                        f"use 1 to {spec.brokers}")
    cfg = dict(configs or {})
    min_isr = _int_prop(cfg, "min.insync.replicas", "topic.configs")
    if min_isr is None:
        min_isr = _int_prop(spec.props_for(1), "min.insync.replicas", "config")
    if min_isr is not None and min_isr > replication_factor:
        raise SpecError("topic.configs.min.insync.replicas",
                        f"{min_isr} is more than the replication factor {replication_factor}: "
                        "no acks=all write could succeed",
                        f"use at most {replication_factor} or raise the replication factor")
