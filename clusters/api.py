"""The small protocols a cluster and its nodes offer.

Faults and workloads depend on these, not on the Docker implementation.
Optional capabilities (things only some clusters can do) are separate
protocols, checked with isinstance() on the runtime_checkable ones.
"""
from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol, runtime_checkable

if TYPE_CHECKING:
    from clusters.config import NodePlan
    from clusters.migration import MigrationPlan
    from clusters.spec import ClusterSpec

# Node roles (clusters/roles.py), named here too: what a node is is part of its protocol.
from clusters.roles import (  # noqa: E402,F401 - re-exported
    BROKER,
    BROKER_ROLES,
    COMBINED,
    CONTROLLER,
    CONTROLLER_ROLES,
    TOXIPROXY,
    ZOOKEEPER,
)


@dataclass(frozen=True)
class ExecResult:
    exit_code: int
    output: str


@dataclass(frozen=True)
class PartitionState:
    topic: str
    partition: int
    leader: int | None          # broker id, None when offline
    replicas: tuple[int, ...]
    isr: tuple[int, ...]
    leader_epoch: int | None = None   # where the source tells it (metadata_probe)


@runtime_checkable
class ElectedView(Protocol):
    """Partitions as the controller last elected them: not as whichever broker a
    client asked (a deposed leader, still reached by clients, answers "I lead")."""

    def elected_partitions(self, topics: list[str] | None = None,
                           timeout: float = 1.0) -> list[PartitionState]: ...


# Container states (DockerNode.status()) in which a node is down: nothing to stop.
DOWN_STATES = ("exited", "dead", "removed", "created")


@runtime_checkable
class Node(Protocol):
    name: str                   # network alias and hostname, unique per cluster (not the
                                # container's name: DockerNode.container_name)
    role: str                   # one of the roles above
    node_id: int | None         # Kafka broker/controller id, or ZooKeeper myid

    @property
    def ip(self) -> str: ...
    def kill(self, signal: str = "SIGKILL") -> None: ...
    def stop(self, timeout: float = 30) -> None: ...
    def start(self) -> None: ...
    def restart(self) -> None: ...
    def pause(self) -> None: ...
    def unpause(self) -> None: ...
    def is_running(self) -> bool: ...
    def exec(self, cmd: str | list[str], user: str = "root") -> ExecResult: ...
    def logs(self) -> str: ...


@runtime_checkable
class Cluster(Protocol):
    run_id: str

    def start(self) -> "Cluster": ...
    def stop(self) -> None: ...
    def nodes(self, role: str | Iterable[str] | None = None) -> list[Node]: ...
    def node(self, name_or_id: str | int) -> Node: ...
    def brokers(self) -> list[Node]: ...
    def bootstrap_servers(self) -> str: ...
    def client_config(self) -> dict[str, str]: ...   # TLS/SASL beside the bootstrap; may hold secrets
    def create_topic(self, name: str, partitions: int, replication_factor: int,
                     configs: dict[str, str] | None = None) -> None: ...
    def partitions(self, topic: str | None = None) -> list[PartitionState]: ...
    def leader_of(self, topic: str, partition: int) -> Node | None: ...
    def active_controller(self) -> Node | None: ...
    def wait_healthy(self, timeout: float = 60) -> None: ...
    def collect_logs(self, directory: str) -> list[str]: ...


@runtime_checkable
class BrokerReadiness(Protocol):
    """A cluster that can tell whether a broker has finished starting."""

    def broker_ready(self, node: Node) -> bool: ...


@runtime_checkable
class MetadataLimits(Protocol):
    """A cluster that may not be allowed to see everything (an external one): what it
    could not see (the controller, the quorum) and why."""

    def limits(self) -> dict[str, str]: ...


@runtime_checkable
class JavaClientAccess(Protocol):
    """A cluster whose Java clients (Kafka's tools, in a container on its network) need
    more than its bootstrap address: (client settings, environment, host path -> mount)."""

    def java_client(self) -> tuple[dict[str, str], dict[str, str], dict[str, str]]: ...


@runtime_checkable
class Replaceable(Protocol):
    """A cluster whose node containers can be re-created on another image
    keeping their data (rolling upgrades)."""

    def replace_node(self, node: Node, version: str) -> Node: ...


@runtime_checkable
class Migratable(Protocol):
    """A ZooKeeper-mode cluster that can move to KRaft in place, Kafka's way
    (faults/migration.py runs the steps, clusters/migration.py renders the
    configs): nodes added beside the running ones, a node re-created with another
    role and config keeping its data and address alias, ZooKeeper retired, and
    finally the cluster describes itself by its new spec."""

    def migration_plan(self, controllers: int) -> "MigrationPlan": ...
    def add_node(self, plan: "NodePlan", cluster_id: str | None = None) -> Node: ...
    def reconfigure_node(self, node: Node, plan: "NodePlan") -> Node: ...
    def retire_node(self, node: Node) -> None: ...
    def adopt_spec(self, spec: "ClusterSpec", cluster_id: str | None = None) -> None: ...
