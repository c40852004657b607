"""Renders each node's server.properties / zoo.cfg from a ClusterSpec.

Node addresses inside the cluster network are the short network aliases
(`kafka-1`, `broker-2`, `controller-1`, `zk-1`), which survive a container
being re-created. The client listener advertises the container's IP
(`@SELF_IP@`, filled in by the entrypoint) because the host reaches the
brokers by IP; with toxiproxy it advertises the proxy's address instead.
"""
from __future__ import annotations

import base64
import uuid
from dataclasses import dataclass

from clusters.roles import BROKER, COMBINED, CONTROLLER, ZOOKEEPER
from clusters.security import broker_security_props, controller_security_props, listener_protocols
from clusters.spec import KRAFT_COMBINED, KRAFT_ISOLATED, TOXIPROXY_ALL, TOXIPROXY_OFF, ClusterSpec
from clusters.spec import ZOOKEEPER as ZOOKEEPER_MODE
from clusters.versions import SHARE_GROUPS

CLIENT_PORT = 9092
INTERNAL_PORT = 9093
CONTROLLER_PORT = 9094
METRICS_PORT = 7071
ZK_CLIENT_PORT = 2181
TOXIPROXY_API_PORT = 8474
TOXI_CLIENT_BASE = 19000       # toxiproxy listens on 19000+broker_id for clients
TOXI_INTERNAL_BASE = 29000     # … and 29000+broker_id for replication
TOXIPROXY_ALIAS = "toxiproxy"
LOG_DIR = "/var/lib/kafka/data"
ZK_DATA_DIR = "/var/lib/zookeeper"


@dataclass(frozen=True)
class NodePlan:
    alias: str           # network alias and node name
    role: str
    node_id: int
    config: str          # server.properties or zoo.cfg text


def node_alias(role: str, node_id: int) -> str:
    return {COMBINED: f"kafka-{node_id}", BROKER: f"broker-{node_id}",
            CONTROLLER: f"controller-{node_id - 1000}", ZOOKEEPER: f"zk-{node_id}"}[role]


def _defaults(spec: ClusterSpec) -> dict[str, str]:
    """Harness defaults, chosen for small fast test clusters; users override any of them."""
    rf = str(min(3, spec.brokers))
    return {**_general_defaults(spec, rf), **_share_defaults(spec, rf)}


def _general_defaults(spec: ClusterSpec, rf: str) -> dict[str, str]:
    return {
        "offsets.topic.replication.factor": rf,
        "transaction.state.log.replication.factor": rf,
        "transaction.state.log.min.isr": str(min(2, spec.brokers)),
        "default.replication.factor": rf,
        "auto.create.topics.enable": "false",
        "group.initial.rebalance.delay.ms": "0",
        "unclean.leader.election.enable": "false",
        "num.partitions": "1",
        "log.segment.bytes": str(64 * 1024 * 1024),
        "offsets.topic.num.partitions": "10",
        # made on a producer's first FindCoordinator, inside its initTransactions: 50
        # partitions (Kafka's default) x RF 3 took 2.1-3.8 s to elect and load on 2 busy
        # cores, 10 take 1.1-1.9 s (issue 34)
        "transaction.state.log.num.partitions": "10",
        "num.network.threads": "2",
        "num.io.threads": "4",
        "num.replica.fetchers": "1",
        "background.threads": "4",
    }


def _share_defaults(spec: ClusterSpec, rf: str) -> dict[str, str]:
    """`__share_group_state` sized like the transaction log, on the lines that have share
    groups only (an older broker warns of keys it does not know; each line's
    server.properties keeps to what that line reads)."""
    if not spec.kafka.has(SHARE_GROUPS):
        return {}
    return {
        "share.coordinator.state.topic.replication.factor": rf,
        "share.coordinator.state.topic.min.isr": str(min(2, spec.brokers)),
        # made on the first share-group FindCoordinator: Kafka's 50 partitions load slowly
        # on 2 busy cores, as the transaction log's did (issue 34)
        "share.coordinator.state.topic.num.partitions": "10",
    }


def props_text(props: dict[str, str]) -> str:
    return "\n".join(f"{k}={v}" for k, v in props.items()) + "\n"


def listener_addresses(spec: ClusterSpec, broker_id: int, alias: str) -> tuple[str, str]:
    """(client advertised address, internal advertised address) for one broker."""
    if spec.toxiproxy == TOXIPROXY_OFF:
        client = f"@SELF_IP@:{CLIENT_PORT}"
    else:
        client = f"@TOXIPROXY_IP@:{TOXI_CLIENT_BASE + broker_id}"
    if spec.toxiproxy == TOXIPROXY_ALL:
        internal = f"{TOXIPROXY_ALIAS}:{TOXI_INTERNAL_BASE + broker_id}"
    else:
        internal = f"{alias}:{INTERNAL_PORT}"
    return client, internal


def quorum_voters(spec: ClusterSpec) -> str:
    """controller.quorum.voters of a KRaft spec ('' in ZooKeeper mode)."""
    role = COMBINED if spec.mode == KRAFT_COMBINED else CONTROLLER
    return ",".join(f"{i}@{node_alias(role, i)}:{CONTROLLER_PORT}" for i in spec.controller_ids())


def quorum_props(spec: ClusterSpec) -> dict[str, str]:
    """How a KRaft node finds the quorum: a fixed voters list, or (dynamic quorum,
    KIP-853) bootstrap servers, the voters themselves being in the metadata log."""
    if not spec.dynamic_quorum:
        return {"controller.quorum.voters": quorum_voters(spec)}
    role = COMBINED if spec.mode == KRAFT_COMBINED else CONTROLLER
    return {"controller.quorum.bootstrap.servers": ",".join(
        f"{node_alias(role, i)}:{CONTROLLER_PORT}" for i in spec.controller_ids())}


def directory_id(cluster_id: str, node_id: int) -> str:
    """A node's log directory id, derived from the cluster id so every node's format
    command can name every initial controller's (a Kafka Uuid: URL-safe base64)."""
    raw = uuid.uuid5(uuid.NAMESPACE_OID, f"{cluster_id}/{node_id}").bytes
    text = base64.urlsafe_b64encode(raw).decode().rstrip("=")
    return text if not text.startswith("-") else "A" + text[1:]


def initial_controllers(spec: ClusterSpec, cluster_id: str) -> str:
    role = COMBINED if spec.mode == KRAFT_COMBINED else CONTROLLER
    return ",".join(f"{i}@{node_alias(role, i)}:{CONTROLLER_PORT}:{directory_id(cluster_id, i)}"
                    for i in spec.controller_ids())


def zookeeper_connect(spec: ClusterSpec) -> str:
    return ",".join(f"{node_alias(ZOOKEEPER, j)}:{ZK_CLIENT_PORT}" for j in range(1, spec.zookeepers + 1))


def _zookeeper_plans(spec: ClusterSpec) -> list[NodePlan]:
    plans = []
    for i in range(1, spec.zookeepers + 1):
        lines = ["tickTime=2000", "initLimit=10", "syncLimit=5", f"dataDir={ZK_DATA_DIR}",
                 f"clientPort={ZK_CLIENT_PORT}", "4lw.commands.whitelist=*",
                 "maxClientCnxns=0", "admin.enableServer=false"]
        if spec.zookeepers > 1:
            lines += [f"server.{j}={node_alias(ZOOKEEPER, j)}:2888:3888"
                      for j in range(1, spec.zookeepers + 1)]
            lines.append("quorumListenOnAllIPs=true")
        plans.append(NodePlan(node_alias(ZOOKEEPER, i), ZOOKEEPER, i, "\n".join(lines) + "\n"))
    return plans


def controller_props(spec: ClusterSpec, controller_id: int) -> dict[str, str]:
    """server.properties of an isolated KRaft controller, as a dict."""
    props = {
        "process.roles": "controller", "node.id": str(controller_id),
        **quorum_props(spec),
        "listeners": f"CONTROLLER://0.0.0.0:{CONTROLLER_PORT}",
        "controller.listener.names": "CONTROLLER",
        "listener.security.protocol.map": "CONTROLLER:SSL" if spec.secured else "CONTROLLER:PLAINTEXT",
        "log.dirs": LOG_DIR,
    }
    if spec.secured:
        props.update(controller_security_props(node_alias(CONTROLLER, controller_id)))
    # Controllers take the cluster-wide overrides too (quorum timeouts live there).
    props.update({k: v for k, v in spec.config})
    return props


def broker_role(spec: ClusterSpec) -> str:
    return COMBINED if spec.mode == KRAFT_COMBINED else BROKER


def broker_props(spec: ClusterSpec, broker_id: int) -> dict[str, str]:
    """server.properties of one broker (or combined node), as a dict."""
    role = broker_role(spec)
    alias = node_alias(role, broker_id)
    client_addr, internal_addr = listener_addresses(spec, broker_id, alias)
    listeners = [f"CLIENT://0.0.0.0:{CLIENT_PORT}", f"INTERNAL://0.0.0.0:{INTERNAL_PORT}"]
    protocols = listener_protocols(spec.is_kraft, spec.secured)
    props: dict[str, str] = {}
    if spec.is_kraft:
        props["process.roles"] = "broker,controller" if role == COMBINED else "broker"
        props["node.id"] = str(broker_id)
        props.update(quorum_props(spec))
        props["controller.listener.names"] = "CONTROLLER"
        if role == COMBINED:
            listeners.append(f"CONTROLLER://0.0.0.0:{CONTROLLER_PORT}")
    else:
        props["broker.id"] = str(broker_id)
        props["zookeeper.connect"] = zookeeper_connect(spec)
    props.update({
        "listeners": ",".join(listeners),
        "advertised.listeners": f"CLIENT://{client_addr},INTERNAL://{internal_addr}",
        "listener.security.protocol.map": ",".join(protocols),
        "inter.broker.listener.name": "INTERNAL",
        "log.dirs": LOG_DIR,
    })
    if spec.secured:
        props.update(broker_security_props(alias, spec.is_kraft))
    props.update(_defaults(spec))
    props.update(spec.props_for(broker_id))
    return props


def format_args(spec: ClusterSpec, role: str = BROKER, cluster_id: str = "") -> str:
    """More `kafka-storage format` options for a new KRaft node (the entrypoint's
    FORMAT_ARGS): feature levels the spec asks for instead of the line's defaults, and a
    dynamic quorum's initial controllers (on the nodes that are controllers)."""
    if not spec.is_kraft:
        return ""
    args = []
    if spec.eligible_leader_replicas is not None:
        args.append(f"--feature eligible.leader.replicas.version={int(spec.eligible_leader_replicas)}")
    if spec.transaction_version is not None:
        args.append(f"--feature transaction.version={spec.transaction_version}")
    if spec.share_version is not None:
        args.append(f"--feature share.version={spec.share_version}")
    if spec.dynamic_quorum and role in (CONTROLLER, COMBINED):
        args.append(f"--initial-controllers {initial_controllers(spec, cluster_id)}")
    return " ".join(args)


def plan_nodes(spec: ClusterSpec) -> list[NodePlan]:
    """Every node of the cluster, in start order (ZooKeeper/controllers first)."""
    plans = _zookeeper_plans(spec) if spec.mode == ZOOKEEPER_MODE else []
    if spec.mode == KRAFT_ISOLATED:
        plans += [NodePlan(node_alias(CONTROLLER, cid), CONTROLLER, cid,
                           props_text(controller_props(spec, cid)))
                  for cid in spec.controller_ids()]
    role = broker_role(spec)
    plans += [NodePlan(node_alias(role, bid), role, bid, props_text(broker_props(spec, bid)))
              for bid in spec.broker_ids()]
    return plans
