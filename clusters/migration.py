"""The node configs of Kafka's ZooKeeper → KRaft migration, step by step, as the
3.9 operations guide ("ZooKeeper to KRaft Migration") writes them.

A ZooKeeper-mode cluster becomes a KRaft cluster with isolated controllers
(`MigrationPlan.kraft_spec`): the same brokers with the same ids, aliases and
data, plus 1 or 3 controllers (ids 1001…, which no ZooKeeper broker.id uses).

1. `controllers`: process.roles=controller plus zookeeper.metadata.migration.enable,
   zookeeper.connect and the brokers' inter-broker listener (until the brokers are
   KRaft, the controller sends them LeaderAndIsr/UpdateMetadata over it); their
   storage is formatted with the ZooKeeper cluster's id.
2. `brokers_migrating`: each ZooKeeper broker's own config plus the migration flag,
   the controller quorum and listener name, and the IBP pinned to the release.
   Once the last one has restarted, the controller copies ZooKeeper's metadata.
3. `brokers_kraft`: process.roles=broker, node.id = the old broker.id, nothing of
   ZooKeeper: the brokers of `kraft_spec`.
4. `controllers_kraft`: the controllers out of migration mode: those of `kraft_spec`.
Then ZooKeeper can be retired.
"""
from __future__ import annotations

from dataclasses import dataclass, replace

from clusters.config import (
    NodePlan,
    broker_props,
    controller_props,
    node_alias,
    plan_nodes,
    props_text,
    zookeeper_connect,
)
from clusters.roles import BROKER, CONTROLLER
from clusters.spec import KRAFT_ISOLATED, ZOOKEEPER, ClusterSpec
from core.errors import SpecError

MIGRATION_FLAG = "zookeeper.metadata.migration.enable"
# What the active controller logs when ZooKeeper's metadata is in the KRaft log
# (3.9 writes "ZooKeeper", older releases "Zookeeper": compare lower-cased).
MIGRATION_DONE_LOG = "completed migration of metadata from zookeeper to kraft"
# kafka.controller:type=KafkaController,name=ZkMigrationState values in 3.9.
ZK_MIGRATION_STATES = {0: "NONE", 1: "MIGRATION", 2: "PRE_MIGRATION", 3: "POST_MIGRATION"}


@dataclass(frozen=True)
class MigrationPlan:
    zk_spec: ClusterSpec
    kraft_spec: ClusterSpec                       # the cluster's shape once migrated
    controllers: tuple[NodePlan, ...]             # step 1: in migration mode
    brokers_migrating: tuple[NodePlan, ...]       # step 2: ZooKeeper brokers, migration on
    brokers_kraft: tuple[NodePlan, ...]           # step 3: KRaft brokers
    controllers_kraft: tuple[NodePlan, ...]       # step 4: out of migration mode


def kraft_spec_of(spec: ClusterSpec, controllers: int) -> ClusterSpec:
    """The KRaft cluster a ZooKeeper-mode spec becomes: same brokers and overrides,
    isolated controllers."""
    if spec.mode != ZOOKEEPER:
        raise SpecError("mode", f"a {spec.mode} cluster has no ZooKeeper to migrate from",
                        "the ZooKeeper → KRaft migration needs a ZooKeeper-mode cluster")
    return replace(spec, mode=KRAFT_ISOLATED, controllers=controllers, zookeepers=1)


def migration_controller_props(spec: ClusterSpec, kraft: ClusterSpec, controller_id: int) -> dict[str, str]:
    props = controller_props(kraft, controller_id)
    props.update({
        MIGRATION_FLAG: "true",
        "zookeeper.connect": zookeeper_connect(spec),
        "inter.broker.listener.name": "INTERNAL",
        "listener.security.protocol.map": "CONTROLLER:PLAINTEXT,INTERNAL:PLAINTEXT",
    })
    return props


def migration_broker_props(spec: ClusterSpec, kraft: ClusterSpec, broker_id: int) -> dict[str, str]:
    props = broker_props(spec, broker_id)
    final = broker_props(kraft, broker_id)
    props.update({
        # The guide: "the brokers must have inter.broker.protocol.version set" to the release.
        "inter.broker.protocol.version": spec.kafka.line,
        MIGRATION_FLAG: "true",
        "controller.quorum.voters": final["controller.quorum.voters"],
        "controller.listener.names": final["controller.listener.names"],
        "listener.security.protocol.map": final["listener.security.protocol.map"],
    })
    props.update(spec.props_for(broker_id))     # a user's override still wins
    return props


def plan_migration(spec: ClusterSpec, controllers: int = 1) -> MigrationPlan:
    """Every node config of the migration of `spec` to KRaft with `controllers` controllers."""
    kraft = kraft_spec_of(spec, controllers)
    final = {p.alias: p for p in plan_nodes(kraft)}
    cids, bids = kraft.controller_ids(), spec.broker_ids()
    return MigrationPlan(
        zk_spec=spec, kraft_spec=kraft,
        controllers=tuple(NodePlan(node_alias(CONTROLLER, c), CONTROLLER, c,
                                   props_text(migration_controller_props(spec, kraft, c)))
                          for c in cids),
        brokers_migrating=tuple(NodePlan(node_alias(BROKER, b), BROKER, b,
                                         props_text(migration_broker_props(spec, kraft, b)))
                                for b in bids),
        brokers_kraft=tuple(final[node_alias(BROKER, b)] for b in bids),
        controllers_kraft=tuple(final[node_alias(CONTROLLER, c)] for c in cids))
