"""ExternalSpec: a cluster the harness did not start and does not own, as data.

    cluster:
      external:
        bootstrap_servers: kafka.staging:9093
        client_config:                          # or client_config_file: ~/client.properties
          security.protocol: SASL_SSL
          sasl.mechanism: SCRAM-SHA-512
          sasl.username: chaos
          sasl.password: ${env:KAFKA_PASSWORD}  # clusters/secrets.py: never written
          ssl.ca.location: /etc/kafka/ca.pem
        nodes:                                  # optional: what exec faults' commands need
          kafka-0: {id: 0, pod: my-cluster-kafka-0}
        topic_prefix: "harness-{run_id}-"       # the default; {run_id} is the run's id
        keep_topics: false

Parsing reads no file and no environment (a stored scenario.yaml is parsed again
when a run is verified later, where neither need exist); `settings()` reads the
client file and resolves the references when clients are made, and `check_settings()`
does the same for a run's checks before it starts.
"""
from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from clusters import client_config as cc
from clusters.roles import BROKER, COMBINED, CONTROLLER
from clusters.secrets import Redactor, redacted, resolve, secret_values
from core.errors import SpecError

FIELD = "cluster.external"
DEFAULT_PREFIX = "harness-{run_id}-"
NODE_ROLES = (BROKER, COMBINED, CONTROLLER)
_KEYS = ("bootstrap_servers", "client_config", "client_config_file", "nodes", "topic_prefix",
         "keep_topics", "connect_timeout_s")
_TEMPLATE_KEY = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_PREFIX_OK = re.compile(r"^[A-Za-z0-9._-]+$")


@dataclass(frozen=True)
class ExternalNode:
    """One node of an external cluster: its name, broker id, and what commands need."""
    name: str
    node_id: int | None
    role: str = BROKER
    vars: tuple[tuple[str, str], ...] = ()

    def template_vars(self) -> dict[str, str]:
        return {"node": self.name, **({"id": str(self.node_id)} if self.node_id is not None else {}),
                **dict(self.vars)}


@dataclass(frozen=True)
class ExternalSpec:
    bootstrap_servers: str | None = None
    client_config: tuple[tuple[str, str], ...] = ()      # as written: references unresolved
    client_config_file: str | None = None
    nodes: tuple[ExternalNode, ...] = ()
    topic_prefix: str = DEFAULT_PREFIX
    keep_topics: bool = False
    connect_timeout_s: float = 15.0
    # where each field is in the scenario file ("ext.yaml:4 cluster.external.bootstrap_servers"),
    # for the checks a run makes before it starts
    locations: tuple[tuple[str, str], ...] = field(default=(), compare=False)

    # -- parsing ---------------------------------------------------------------------
    @classmethod
    def from_dict(cls, data: Any) -> "ExternalSpec":
        if not isinstance(data, Mapping):
            raise SpecError(FIELD, "must be a mapping", "write external: {bootstrap_servers: host:9092}")
        unknown = sorted(set(data) - set(_KEYS))
        if unknown:
            raise SpecError(f"{FIELD}.{unknown[0]}", "unknown field", f"use one of {', '.join(_KEYS)}")
        if not data.get("bootstrap_servers") and not data.get("client_config_file"):
            raise SpecError(f"{FIELD}.bootstrap_servers", "is missing",
                            "give host:port[,host:port…], or a client_config_file that has bootstrap.servers")
        config = data.get("client_config") or {}
        if not isinstance(config, Mapping):
            raise SpecError(f"{FIELD}.client_config", "must be a mapping of client settings",
                            "write e.g. client_config: {security.protocol: SASL_SSL}")
        config = {str(k): cc._text(v) for k, v in config.items()}
        _check_keys(config)
        return cls(bootstrap_servers=_bootstrap(data.get("bootstrap_servers")),
                   client_config=tuple(sorted(config.items())),
                   client_config_file=_optional_text(data, "client_config_file"),
                   nodes=_nodes(data.get("nodes")),
                   topic_prefix=_prefix(data.get("topic_prefix", DEFAULT_PREFIX)),
                   keep_topics=_flag(data, "keep_topics"),
                   connect_timeout_s=_timeout(data.get("connect_timeout_s", 15.0)))

    def with_locations(self, locations: Mapping[str, str]) -> "ExternalSpec":
        return replace(self, locations=tuple(sorted(locations.items())))

    def where(self, key: str = "") -> str:
        """The file:line and field of `key`, for a message (the field alone when unknown)."""
        locations = dict(self.locations)
        if key in locations:
            return locations[key]
        section = locations.get("", FIELD)
        return f"{section}.{key}" if key else section

    # -- using it --------------------------------------------------------------------
    def _file_settings(self) -> dict[str, str]:
        if self.client_config_file is None:
            return {}
        return cc.load_client_file(self.client_config_file, self.where("client_config_file"))

    def settings(self) -> tuple[str, dict[str, str], Redactor]:
        """(bootstrap servers, librdkafka connection settings with secrets resolved, a
        redactor of those secrets). Reads the client file and the environment."""
        from_file = self._file_settings()
        raw = {**from_file, **dict(self.client_config)}
        bootstrap = self.bootstrap_servers or from_file.get(cc.BOOTSTRAP)
        if not bootstrap:
            raise SpecError(self.where("client_config_file"), "has no bootstrap.servers",
                            "add it to the file, or give cluster.external.bootstrap_servers")
        resolved = resolve(raw, self.where("client_config"))
        conf = cc.to_librdkafka(resolved, self.where("client_config"))
        return bootstrap, conf, Redactor(secret_values(raw, resolved))

    def check_settings(self) -> None:
        self.settings()

    def prefix_for(self, run_id: str) -> str:
        return self.topic_prefix.replace("{run_id}", run_id)

    def acl_prefix(self) -> str:
        """What every run's names start with (the prefixed ACLs' name): the prefix up to
        its {run_id}, "harness-" for the default."""
        return self.topic_prefix.split("{run_id}")[0]

    def node(self, name: str) -> ExternalNode | None:
        return next((n for n in self.nodes if n.name == name), None)

    def to_dict(self) -> dict[str, Any]:
        """For scenario.yaml and the manifest: references kept, literal secrets hidden."""
        out: dict[str, Any] = {}
        if self.bootstrap_servers:
            out["bootstrap_servers"] = self.bootstrap_servers
        if self.client_config:
            out["client_config"] = redacted(dict(self.client_config))
        if self.client_config_file:
            out["client_config_file"] = self.client_config_file
        if self.nodes:
            out["nodes"] = {n.name: {**({"id": n.node_id} if n.node_id is not None else {}),
                                     **({"role": n.role} if n.role != BROKER else {}), **dict(n.vars)}
                            for n in self.nodes}
        out.update(topic_prefix=self.topic_prefix, keep_topics=self.keep_topics,
                   connect_timeout_s=self.connect_timeout_s)
        return out


def _check_keys(config: Mapping[str, str]) -> None:
    for key in config:
        if key != cc.BOOTSTRAP and not key.startswith(cc.CONNECTION_PREFIXES):
            raise SpecError(f"{FIELD}.client_config.{key}", "is not a connection setting",
                            "give security.protocol, sasl.* and ssl.* here; other client settings "
                            "go in a workload's own client_config")


def _bootstrap(value: Any) -> str | None:
    if value is None:
        return None
    if isinstance(value, list):
        value = ",".join(map(str, value))
    if not isinstance(value, str) or not all(re.fullmatch(r"[^\s:,]+:\d+", s.strip())
                                             for s in value.split(",")):
        raise SpecError(f"{FIELD}.bootstrap_servers", f"{value!r} is not host:port[,host:port…]",
                        "write e.g. kafka-0.kafka:9092,kafka-1.kafka:9092")
    return ",".join(s.strip() for s in value.split(","))


def _optional_text(data: Mapping, key: str) -> str | None:
    value = data.get(key)
    if value is not None and (not isinstance(value, str) or not value):
        raise SpecError(f"{FIELD}.{key}", f"{value!r} is not a path", "give the file's path")
    return value


def _flag(data: Mapping, key: str) -> bool:
    value = data.get(key, False)
    if not isinstance(value, bool):
        raise SpecError(f"{FIELD}.{key}", f"{value!r}", "write true or false")
    return value


def _timeout(value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 1 <= value <= 600:
        raise SpecError(f"{FIELD}.connect_timeout_s", f"{value!r}", "use 1 to 600 seconds")
    return float(value)


def _prefix(value: Any) -> str:
    text = str(value) if isinstance(value, (str, int)) else None
    plain = text.replace("{run_id}", "run") if text else None
    if not plain or not _PREFIX_OK.match(plain) or len(plain) > 120:
        raise SpecError(f"{FIELD}.topic_prefix", f"{value!r} is not a topic-name prefix",
                        "use letters, digits, '.', '_', '-' and {run_id}, e.g. harness-{run_id}-")
    return text


def _nodes(data: Any) -> tuple[ExternalNode, ...]:
    if data is None:
        return ()
    if not isinstance(data, Mapping):
        raise SpecError(f"{FIELD}.nodes", "must be a mapping of node names",
                        "write nodes: {kafka-0: {id: 0, pod: my-cluster-kafka-0}}")
    out, ids = [], set()
    for name, fields in data.items():
        where = f"{FIELD}.nodes.{name}"
        if not isinstance(fields, Mapping):
            raise SpecError(where, "must be a mapping", "write {id: 0, pod: my-cluster-kafka-0}")
        node_id = fields.get("id")
        if node_id is not None and (isinstance(node_id, bool) or not isinstance(node_id, int)):
            raise SpecError(f"{where}.id", f"{node_id!r} is not a broker id", "write the node's id")
        role = fields.get("role", BROKER)
        if role not in NODE_ROLES:
            raise SpecError(f"{where}.role", f"{role!r}", f"use one of {', '.join(NODE_ROLES)}")
        if role != CONTROLLER and node_id is None:
            raise SpecError(f"{where}.id", "is missing", "give the broker's id (its node.id)")
        if node_id is not None and node_id in ids:
            raise SpecError(f"{where}.id", f"{node_id} is another node's id too", "give each node its own id")
        ids.add(node_id)
        extra = []
        for k, v in fields.items():
            if k in ("id", "role"):
                continue
            if not _TEMPLATE_KEY.match(str(k)) or isinstance(v, (dict, list)) or v is None:
                raise SpecError(f"{where}.{k}", "a node's fields are names with plain values",
                                "write e.g. pod: my-cluster-kafka-0")
            extra.append((str(k), cc._text(v)))
        out.append(ExternalNode(str(name), node_id, role, tuple(extra)))
    return tuple(out)
