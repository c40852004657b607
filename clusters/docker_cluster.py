"""DockerCluster: a real Kafka cluster in Docker containers on its own internal network.

    with DockerCluster(ClusterSpec.kraft_combined("3.9")) as cluster:
        cluster.create_topic("t", partitions=6, replication_factor=3,
                             configs={"min.insync.replicas": "2"})
        producer = Producer({"bootstrap.servers": cluster.bootstrap_servers()})

Lifecycle: `start()` checks the spec and images, creates the network, the
log-dir mounts and the containers (ZooKeeper/controllers first), then waits
until healthy. Any failure on the way tears down what was made. `stop()`
removes every container and network labelled with the run id (including ones
that faults and workloads added), then the mounts; each step runs even if an
earlier one failed.
"""
from __future__ import annotations

import logging
import os
import struct
import time
from collections.abc import Iterable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

os.environ.setdefault("TESTCONTAINERS_RYUK_DISABLED", "true")  # Ryuk cannot be pulled here

import base64
import uuid

from confluent_kafka import KafkaError, KafkaException  # noqa: E402
from confluent_kafka.admin import AdminClient, NewTopic  # noqa: E402
from testcontainers.core.container import DockerContainer  # noqa: E402
from testcontainers.core.network import Network  # noqa: E402

from clusters import cleanup, storage  # noqa: E402
from clusters.admin_retry import AdminError, admin_retry, is_transient  # noqa: E402
from clusters.api import (  # noqa: E402
    BROKER_ROLES,
    CONTROLLER,
    CONTROLLER_ROLES,
    DOWN_STATES,
    TOXIPROXY,
    ZOOKEEPER,
    PartitionState,
)
from clusters.config import (  # noqa: E402
    CLIENT_PORT,
    LOG_DIR,
    METRICS_PORT,
    TOXI_CLIENT_BASE,
    TOXIPROXY_ALIAS,
    ZK_DATA_DIR,
    NodePlan,
    format_args,
    plan_nodes,
)
from clusters.docker_env import docker_client  # noqa: E402
from clusters.images import ensure_images  # noqa: E402
from clusters.kafka_wire import WireSecurity  # noqa: E402
from clusters.labels import RUN_ID, new_run_id, run_labels  # noqa: E402
from clusters.log_levels import log_levels_env  # noqa: E402
from clusters.metadata_probe import broker_view, elected  # noqa: E402
from clusters.metrics import scrape  # noqa: E402
from clusters.migration import MigrationPlan, plan_migration  # noqa: E402
from clusters.node import DockerNode  # noqa: E402
from clusters.protocol_proxy import ProtocolProxy  # noqa: E402
from clusters.security import ClusterSecurity  # noqa: E402
from clusters.spec import TOXIPROXY_OFF, ClusterSpec, validate_topic  # noqa: E402
from clusters.toxiproxy_wiring import ToxiproxyWiring  # noqa: E402
from clusters.versions import resolve_version  # noqa: E402
from core.errors import HarnessError, SpecError  # noqa: E402

log = logging.getLogger(__name__)

# kafka.server BrokerState values: 0 NOT_RUNNING, 1 STARTING, 2 RECOVERY, 3 RUNNING …
BROKER_STATE_RUNNING = 3


class ClusterUnhealthy(HarnessError):
    pass


class DockerCluster:
    def __init__(self, spec: ClusterSpec, run_id: str | None = None, keep: bool = False):
        """`keep`: a cluster that outlives its process (`harness cluster up`): labelled
        so that `harness gc` leaves it (only `gc --all` or `harness cluster down` remove it)."""
        self.spec = spec
        self.run_id = run_id or new_run_id()
        self.keep = keep
        self.security: ClusterSecurity | None = None
        self.name = f"kh-{self.run_id}-{spec.name}"
        self._network: Network | None = None
        self._start_cut_short = False     # start() ended by an exception (Ctrl-C, a failure)
        self._nodes: list[DockerNode] = []
        self._toxiproxy: DockerNode | None = None
        self._retired: list[DockerNode] = []              # stopped for good (retire_node)
        self._past_logs: list[tuple[str, str]] = []       # (alias, log) of re-created containers
        self.toxiproxy: ToxiproxyWiring | None = None
        self.protocol_proxy: ProtocolProxy | None = None     # spec.protocol_proxy
        self._admin: AdminClient | None = None
        self._create_admin: AdminClient | None = None
        self._cluster_id = kraft_cluster_id() if spec.is_kraft else None
        self.image = ""
        self.started_at: float | None = None

    # ---- lifecycle -------------------------------------------------------------------
    def __enter__(self) -> "DockerCluster":
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()

    def start(self, timeout: float = 180) -> "DockerCluster":
        """Bring every node up and wait until healthy; tear down on any failure."""
        if self.keep and self.spec.protocol_proxy:
            raise SpecError("cluster.protocol_proxy", "the protocol proxy runs in the process "
                            "that starts the cluster, and a kept cluster outlives it",
                            "leave protocol_proxy out of a cluster started with `harness cluster up`")
        tags = ensure_images([self.spec.kafka.version], toxiproxy=self.spec.toxiproxy != TOXIPROXY_OFF)
        self.image = tags[f"kafka-{self.spec.kafka.version}"]
        cleanup.register(self)
        self.started_at = time.monotonic()
        try:
            if self.keep:
                storage.write_owner(self.run_id, self._labels())
            self._network = Network(docker_network_kw={
                "internal": True, "labels": self._labels(cluster=self.spec.name),
                "driver": "bridge"})
            self._network.name = self.name
            self._network.create()
            if self.spec.secured:
                self.security = ClusterSecurity.create(
                    storage.run_mount_dir(self.run_id) / "secrets", self._subnet())
            if self.spec.toxiproxy != TOXIPROXY_OFF:
                self._start_toxiproxy(tags["toxiproxy"])
            self._start_nodes()
            self.wait_healthy(timeout)
        except BaseException:
            self._start_cut_short = True
            self.stop()
            raise
        if self.keep:
            cleanup.unregister(self)          # not stopped when this process exits
        return self

    def _labels(self, **extra: str) -> dict[str, str]:
        return run_labels(self.run_id, **extra, **({"kept": "true"} if self.keep else {}))

    def _subnet(self) -> str | None:
        config = docker_client().networks.get(self.name).attrs.get("IPAM", {}).get("Config") or []
        return next((c["Subnet"] for c in config if c.get("Subnet")), None)

    def _start_nodes(self) -> None:
        """Every node in plan order; a secured ZooKeeper-mode cluster's SCRAM user is
        written into ZooKeeper before the first broker starts."""
        for plan in plan_nodes(self.spec):
            if plan.role != ZOOKEEPER and self.security is not None and not self.spec.is_kraft \
                    and not self.brokers():
                self._zookeeper_user()
            self._nodes.append(self._start_node(plan))

    def _zookeeper_user(self, timeout: float = 60) -> None:
        zk = self.nodes(ZOOKEEPER)[0]
        deadline = time.monotonic() + timeout
        while True:
            result = zk.exec(self.security.zookeeper_user_script())
            if result.exit_code == 0:
                return
            if time.monotonic() > deadline:
                raise ClusterUnhealthy(f"could not create the SCRAM user in ZooKeeper: "
                                       f"{result.output.strip()[-500:]}")
            time.sleep(1)

    def _container(self, image: str, alias: str, role: str, node_id: int | None,
                   env: dict[str, str], mounts: dict[str, str], mem_mb: int) -> DockerNode:
        container = DockerContainer(
            image, name=f"{self.name}-{alias}", network=self._network, network_aliases=[alias],
            env=env, init=True, cap_add=["NET_ADMIN"], mem_limit=f"{mem_mb}m",
            hostname=alias,
            labels=self._labels(role=role, cluster=self.spec.name, node=alias))
        for host_path, container_path in mounts.items():
            container.with_volume_mapping(host_path, container_path, "rw")
        container.start()
        return DockerNode(alias, role, node_id, container, self.name, image)

    def replace_node(self, node: DockerNode, version: str) -> DockerNode:
        """Re-create one node's container on another Kafka version's image, keeping its
        data (the log dir is a host mount), name, address alias and config. The old
        container is shut down cleanly first. Returns the new node; the old object is
        stale afterwards."""
        kv = resolve_version(version)
        if not self.spec.is_kraft and not kv.zookeeper:
            raise SpecError("version", f"a ZooKeeper-mode cluster cannot run Kafka {kv.version}",
                            "migrate to KRaft first, or pick a version with ZooKeeper mode")
        if node.role == ZOOKEEPER:
            raise HarnessError(f"{node.name} is a ZooKeeper node, not Kafka: nothing to upgrade")
        image = ensure_images([kv.version])[f"kafka-{kv.version}"]
        plan = next(p for p in plan_nodes(self.spec) if p.alias == node.name)
        return self._recreate(node, plan, image)

    def _recreate(self, node: DockerNode, plan: NodePlan, image: str | None = None) -> DockerNode:
        """Shut the node's container down cleanly, remove it (its log is kept for
        collect_logs) and start a new one from `plan` on the same mount and alias."""
        index = self._nodes.index(node)
        if node.status() not in DOWN_STATES:
            node.stop(timeout=120)
        if node.status() != "removed":
            self._past_logs.append((node.name, node.logs()))
            node.container.remove(force=True)
        new = self._start_node(plan, image=image or node.image)
        self._nodes[index] = new
        return new

    # ---- reshaping: clusters.api.Migratable --------------------------------------------
    def migration_plan(self, controllers: int = 1) -> MigrationPlan:
        return plan_migration(self.spec, controllers)

    def add_node(self, plan: NodePlan, cluster_id: str | None = None,
                 format_extra: str | None = None) -> DockerNode:
        """Start one more node on the cluster's network; labelled with the run id like
        every node, so stop() and `harness gc` remove it. `cluster_id` formats a new
        KRaft node's storage (default: the cluster's own); `format_extra` replaces the
        spec's format options (a controller joining a dynamic quorum: --no-initial-controllers)."""
        node = self._start_node(plan, cluster_id=cluster_id, format_extra=format_extra)
        self._nodes.append(node)
        return node

    def reconfigure_node(self, node: DockerNode, plan: NodePlan) -> DockerNode:
        """Re-create one node with another config (and role), keeping its data and
        alias: the same mount is mounted again. Returns the new node."""
        if plan.alias != node.name:
            raise HarnessError(f"a plan for {plan.alias} cannot reconfigure {node.name}")
        return self._recreate(node, plan)

    def retire_node(self, node: DockerNode) -> None:
        """Stop a node for good: it leaves nodes(), so health checks, selectors and
        heal-all no longer expect it; its stopped container stays until stop(), so
        its log is still collected."""
        if node.status() not in DOWN_STATES:
            node.stop(timeout=60)
        self._nodes.remove(node)
        self._retired.append(node)

    def adopt_spec(self, spec: ClusterSpec, cluster_id: str | None = None) -> None:
        """From now on the cluster is `spec` (after a migration: KRaft, isolated
        controllers): plans, controllers() and health checks follow it. Clients'
        addresses do not change: the brokers are the same nodes."""
        self.spec = spec
        self._cluster_id = cluster_id if spec.is_kraft else None

    def _start_node(self, plan: NodePlan, image: str | None = None,
                    cluster_id: str | None = None, format_extra: str | None = None) -> DockerNode:
        size = max(64, self.spec.log_dir_size_mb // 4) if plan.role == ZOOKEEPER \
            else self.spec.log_dir_size_mb
        data = storage.mount_tmpfs(self.run_id, plan.alias, size)
        config = plan.config
        if self._toxiproxy is not None:
            config = config.replace("@TOXIPROXY_IP@", self._toxiproxy.ip)
        mounts = {str(data): ZK_DATA_DIR if plan.role == ZOOKEEPER else LOG_DIR}
        if self.security is not None and plan.role != ZOOKEEPER:
            self.security.ensure_node(plan.alias)
            config = self.security.fill(config)
            mounts.update(self.security.mounts())
        env = {"ROLE": "zookeeper" if plan.role == ZOOKEEPER else "kafka",
               "NODE_ID": str(plan.node_id), "NODE_CONFIG": config,
               "HEAP_MB": str(self.spec.heap_mb if plan.role != ZOOKEEPER else 256)}
        if plan.role != ZOOKEEPER:
            env.update(log_levels_env(self.spec.log_levels))
        if cluster_id or self._cluster_id:
            env["CLUSTER_ID"] = cluster_id or self._cluster_id
            extra = format_extra if format_extra is not None else \
                format_args(self.spec, plan.role, env["CLUSTER_ID"])
            if self.security is not None:
                extra = f"{extra} {self.security.format_args()}".strip()
            if extra:
                env["FORMAT_ARGS"] = extra
        heap = int(env["HEAP_MB"])
        return self._container(image or self.image, plan.alias, plan.role, plan.node_id, env,
                               mounts, mem_mb=heap + 512)

    def _start_toxiproxy(self, image: str) -> None:
        self._toxiproxy = self._container(image, TOXIPROXY_ALIAS, TOXIPROXY, None, {}, {}, 256)
        self.toxiproxy = ToxiproxyWiring(self._toxiproxy.ip)
        self.toxiproxy.wait_ready()
        upstreams = self._start_protocol_proxy() if self.spec.protocol_proxy else None
        self.toxiproxy.create_broker_proxies(self.spec, upstreams)

    def _start_protocol_proxy(self) -> dict[int, str]:
        """The protocol proxy on the host's address on the cluster network (the toxiproxy
        container reaches it there); each route finds its broker's address when a
        connection opens. Returns toxiproxy's upstream for each broker's client proxy."""
        gateway = self._gateway()
        self.protocol_proxy = ProtocolProxy(gateway)

        def broker_address(bid: int):
            return lambda: (self.broker(bid).ip, CLIENT_PORT)
        return {bid: f"{gateway}:{self.protocol_proxy.add_route(bid, broker_address(bid))}"
                for bid in self.spec.broker_ids()}

    def _gateway(self) -> str:
        config = docker_client().networks.get(self.name).attrs.get("IPAM", {}).get("Config") or []
        gateway = next((c["Gateway"] for c in config if c.get("Gateway")), None)
        if gateway is None:
            raise HarnessError(f"network {self.name} has no gateway: the protocol proxy "
                               "cannot listen where toxiproxy reaches it")
        return gateway

    def stop(self) -> None:
        """Remove every container, the network and the mounts of this run. Idempotent."""
        self._admin = self._create_admin = None
        errors = sweep_run(self.run_id)
        if self._start_cut_short:
            # A Docker call cut short by Ctrl-C (network or container create) still completes
            # in the daemon after we listed: look again once it has had time to land.
            time.sleep(1.0)
            errors = sweep_run(self.run_id)
        try:
            storage.unmount_run(self.run_id)
        except Exception as e:
            errors.append(f"mounts: {e}")
        self._nodes, self._retired = [], []
        self._toxiproxy = None
        if self.protocol_proxy is not None:
            self.protocol_proxy.close()
            self.protocol_proxy = None
        cleanup.unregister(self)
        if errors:
            log.warning("cluster %s teardown had errors: %s", self.name, "; ".join(errors))

    # ---- nodes --------------------------------------------------------------------------
    def nodes(self, role: str | Iterable[str] | None = None) -> list[DockerNode]:
        if role is None:
            return list(self._nodes)
        roles = {role} if isinstance(role, str) else set(role)
        return [n for n in self._nodes if n.role in roles]

    def brokers(self) -> list[DockerNode]:
        return self.nodes(BROKER_ROLES)

    def controllers(self) -> list[DockerNode]:
        """KRaft controller-capable nodes; in ZooKeeper mode every broker, and the KRaft
        controllers of a migration under way (one of them takes the controller role)."""
        if self.spec.is_kraft:
            return self.nodes(CONTROLLER_ROLES)
        return self.brokers() + self.nodes(CONTROLLER)

    def node(self, name_or_id: str | int) -> DockerNode:
        for n in self._nodes:
            if n.name == name_or_id or (isinstance(name_or_id, int) and n.node_id == name_or_id
                                        and n.role != ZOOKEEPER):
                return n
        raise KeyError(f"no node {name_or_id!r} in {self.name}")

    def broker(self, broker_id: int) -> DockerNode:
        for n in self.brokers():
            if n.node_id == broker_id:
                return n
        raise KeyError(f"no broker {broker_id} in {self.name}")

    @property
    def network_name(self) -> str:
        return self.name

    # ---- client side ----------------------------------------------------------------------
    def bootstrap_servers(self) -> str:
        if self._toxiproxy is not None:
            return ",".join(f"{self._toxiproxy.ip}:{TOXI_CLIENT_BASE + n.node_id}"
                            for n in self.brokers())
        return ",".join(f"{n.ip}:{CLIENT_PORT}" for n in self.brokers())

    def client_config(self) -> dict[str, str]:
        """Connection settings every client of this cluster needs beside its bootstrap
        (librdkafka names; empty for a PLAINTEXT cluster). Holds the SCRAM password."""
        return self.security.client_config() if self.security is not None else {}

    def java_client(self) -> tuple[dict[str, str], dict[str, str], dict[str, str]]:
        """Kafka's Java tools' (client settings, environment, mounts) in a container on
        the cluster network; the settings file names the password, the environment holds it."""
        if self.security is None:
            return {}, {}, {}
        props = self.security.java_properties(self.bootstrap_servers())
        props.pop("bootstrap.servers")
        return props, self.security.java_env(), self.security.mounts()

    def admin(self) -> AdminClient:
        if self._admin is None:
            self._admin = AdminClient({"bootstrap.servers": self.bootstrap_servers(),
                                       **self.client_config(),
                                       "socket.timeout.ms": 5000, "request.timeout.ms": 5000,
                                       "metadata.max.age.ms": 500,
                                       # Connection errors while nodes start or are faulted are
                                       # expected; the harness reports state, not client noise.
                                       "log_level": 0})
        return self._admin

    def create_topic(self, name: str, partitions: int, replication_factor: int,
                     configs: dict[str, str] | None = None, timeout: float = 60) -> None:
        """Create a topic and wait until every partition has a leader and full ISR.
        Transient errors (see clusters.admin_retry) are retried within `timeout`."""
        validate_topic(self.spec, name, partitions, replication_factor, configs)
        deadline = time.monotonic() + timeout
        topic = NewTopic(name, partitions, replication_factor, config=dict(configs or {}))
        attempts = 0

        def create(budget: float) -> None:
            nonlocal attempts
            attempts += 1
            future = self._topic_admin().create_topics([topic], request_timeout=budget)[name]
            try:
                future.result(timeout=budget + 5)
            except (KafkaException, TimeoutError) as e:
                err = e.args[0] if e.args else None
                # An earlier attempt whose answer we lost went through.
                if attempts > 1 and isinstance(err, KafkaError) \
                        and err.code() == KafkaError.TOPIC_ALREADY_EXISTS:
                    return
                if isinstance(e, TimeoutError) or (isinstance(err, KafkaError)
                                                   and err.code() == KafkaError._TIMED_OUT):
                    self._create_admin = None       # a timed-out client: the next attempt's is new
                raise

        admin_retry(f"creating topic {name!r}", create, timeout,
                    transient=lambda err: is_transient(err) or _too_few_live_brokers(err))
        while time.monotonic() < deadline:
            try:
                parts = self.partitions(name, timeout=max(1.0, min(5.0, deadline - time.monotonic())))
            except AdminError:
                parts = []
            if len(parts) == partitions and all(p.leader is not None and
                                                len(p.isr) == replication_factor for p in parts):
                self._wait_known_everywhere(name, partitions, deadline)
                return
            time.sleep(0.2)
        raise ClusterUnhealthy(f"topic {name!r} has no leader / full ISR after {timeout:.0f} s")

    def _wait_known_everywhere(self, name: str, partitions: int, deadline: float) -> None:
        """Until every running broker answers metadata with the topic's partitions led
        (at most until `deadline`; one that does not answer is not waited for). Brokers
        learn a new topic each at its own pace, and a client asking one that has not yet
        sees no topic: a consumer group's leader then assigns nothing, and librdkafka
        joins again only at its next periodic metadata refresh (5 min). Seen in a CI
        rehearsal (2026-11-27): a member subscribed right after the topic was made got
        an empty assignment and no record for the test's 60 s."""
        while time.monotonic() < deadline:
            views = self._broker_views([name], 1.0)
            if all(sum(p.topic == name and p.leader is not None for p in v.partitions)
                   == partitions for v in views.values()):
                return
            time.sleep(0.2)
        log.warning("topic %r: not every broker reports it yet", name)

    def _topic_admin(self) -> AdminClient:
        # Its own client: the shared one's short socket timeout suits metadata reads that
        # must skip a frozen broker, not a CreateTopics round trip on a loaded machine.
        # An attempt that timed out drops it (create_topic): librdkafka sends CreateTopics
        # to the broker its metadata names as controller and, when that broker is down,
        # waits for it without asking anyone else. In CI (stop 45) a client stuck so
        # failed every create for 90 s after the broker it waited for was back; a new
        # client asks the live brokers afresh.
        if self._create_admin is None:
            self._create_admin = AdminClient({"bootstrap.servers": self.bootstrap_servers(),
                                              **self.client_config(),
                                              "socket.timeout.ms": 30000,
                                              # Learn a moved controller within seconds.
                                              "topic.metadata.refresh.interval.ms": 5000,
                                              "log_level": 0})
        return self._create_admin

    def _metadata(self, topic: str | None, timeout: float):
        """Cluster metadata, retried in short attempts: a request that lands on a paused or
        partitioned broker times out, and the next attempt goes to another broker."""
        return admin_retry("reading cluster metadata",
                           lambda budget: self.admin().list_topics(topic=topic, timeout=budget),
                           timeout, attempt_s=2.0)

    def partitions(self, topic: str | None = None, timeout: float = 10) -> list[PartitionState]:
        md = self._metadata(topic, timeout)
        out = []
        for t in md.topics.values():
            if t.error is not None and topic is not None:
                continue
            for p in t.partitions.values():
                out.append(PartitionState(t.topic, p.id, p.leader if p.leader >= 0 else None,
                                          tuple(p.replicas), tuple(p.isrs)))
        return sorted(out, key=lambda s: (s.topic, s.partition))

    def elected_partitions(self, topics: list[str] | None = None,
                           timeout: float = 1.0) -> list[PartitionState]:
        """Each partition as the broker with the newest leader epoch for it reports it
        (clusters/metadata_probe.py): the controller's latest election, even while a
        deposed leader still answers clients. Every running broker is asked in parallel;
        one that does not answer within `timeout` (paused, cut off) is left out."""
        views = [v.partitions for v in self._broker_views(topics, timeout).values()]
        if not views:
            raise ClusterUnhealthy("no broker answered a metadata request")
        return [PartitionState(p.topic, p.partition, p.leader, p.replicas, p.isr, p.leader_epoch)
                for p in elected(views)]

    def _broker_views(self, topics: list[str] | None, timeout: float) -> dict:
        """node -> its BrokerView, for every running broker that answered in time."""
        nodes = [n for n in self.brokers() if n.status() == "running"]
        security = WireSecurity.from_client_config(self.client_config()) if self.security else None

        def ask(node):
            try:
                return broker_view(node.ip, CLIENT_PORT, topics, timeout, security)
            except (OSError, ValueError, struct.error):
                return None
        with ThreadPoolExecutor(max_workers=max(1, len(nodes))) as pool:
            return {n: v for n, v in zip(nodes, pool.map(ask, nodes), strict=True)
                    if v is not None}

    def registered_brokers(self, timeout: float = 5) -> set[int]:
        return set(self._metadata(None, timeout).brokers)

    def leader_of(self, topic: str, partition: int) -> DockerNode | None:
        for p in self.partitions(topic):
            if p.partition == partition:
                return self.broker(p.leader) if p.leader is not None else None
        raise KeyError(f"no partition {topic}-{partition}")

    def active_controller(self) -> DockerNode | None:
        """The KRaft quorum leader or the ZooKeeper-mode controller, from each
        node's ActiveControllerCount; None while there is none (or, briefly, two)."""
        nodes = [n for n in self.controllers() if n.status() == "running"]
        # In parallel: a paused or partitioned node must not stall the others' answers.
        with ThreadPoolExecutor(max_workers=max(1, len(nodes))) as pool:
            samples = list(pool.map(lambda n: scrape(n.ip, METRICS_PORT, timeout=1.0), nodes))
        active = [n for n, m in zip(nodes, samples, strict=True)
                  if m.get("kafka_controller_kafkacontroller_activecontrollercount", 0) >= 1]
        if len(active) > 1 and self.spec.mode == ZOOKEEPER:
            return self._controller_by_majority(active)
        return active[0] if len(active) == 1 else None

    def _controller_by_majority(self, claimants: list[DockerNode]) -> DockerNode | None:
        """Of two ZooKeeper-mode brokers that both claim the controller role (one cut
        off from ZooKeeper does not know its session expired), the one most brokers
        name: the new controller told the brokers it reaches, the old one told none."""
        named = [v.controller for v in self._broker_views([], 1.0).values()
                 if v.controller is not None]
        ids = {n.node_id: n for n in claimants}
        votes = sorted(((named.count(i), i) for i in ids), reverse=True)
        if not votes or votes[0][0] == 0 or (len(votes) > 1 and votes[0][0] == votes[1][0]):
            return None
        return ids[votes[0][1]]

    def quorum_leader(self) -> DockerNode | None:
        return self.active_controller() if self.spec.is_kraft else None

    def metrics(self, node: DockerNode) -> dict[str, float]:
        return scrape(node.ip, METRICS_PORT)

    def broker_ready(self, node: DockerNode) -> bool:
        """The broker's own BrokerState is RUNNING: registered, serving clients.
        False while it starts, and for a node that does not answer."""
        state = scrape(node.ip, METRICS_PORT, timeout=1.0).get(
            "kafka_server_kafkaserver_brokerstate")
        return state == BROKER_STATE_RUNNING

    def wait_healthy(self, timeout: float = 60) -> None:
        """All brokers registered, a controller active, every partition led with full ISR."""
        deadline = time.monotonic() + timeout
        want = {n.node_id for n in self.brokers()}
        reason = "not checked yet"
        while time.monotonic() < deadline:
            reason = self._unhealthy_reason(want)
            if reason is None:
                return
            for n in self._nodes:
                if n.status() in ("exited", "dead"):
                    raise ClusterUnhealthy(f"{n.name} exited while waiting for the cluster:\n"
                                           + "\n".join(n.logs().splitlines()[-30:]))
            time.sleep(0.25)
        raise ClusterUnhealthy(f"{self.name} not healthy after {timeout:.0f} s: {reason}")

    def _unhealthy_reason(self, want: set[int]) -> str | None:
        try:
            have = self.registered_brokers(timeout=2)
            if not want <= have:
                return f"brokers registered {sorted(have)}, want {sorted(want)}"
            if self.active_controller() is None:
                return "no single active controller"
            for p in self.partitions(timeout=2):
                if p.leader is None or set(p.isr) != set(p.replicas):
                    return f"{p.topic}-{p.partition} leader={p.leader} isr={p.isr} replicas={p.replicas}"
        except Exception as e:  # brokers still starting: keep waiting
            return f"{type(e).__name__}: {e}"
        return None

    def collect_logs(self, directory: str | os.PathLike) -> list[str]:
        """Each node's log as <alias>.log; earlier containers of a re-created node as
        <alias>.<n>.log (1: the first), retired nodes' as <alias>.log too."""
        out = Path(directory)
        out.mkdir(parents=True, exist_ok=True)
        written = []
        generations: dict[str, int] = {}
        for name, text in self._past_logs:
            generations[name] = generations.get(name, 0) + 1
            path = out / f"{name}.{generations[name]}.log"
            path.write_text(text)
            written.append(str(path))
        for n in self._nodes + self._retired + ([self._toxiproxy] if self._toxiproxy else []):
            try:
                path = out / f"{n.name}.log"
                path.write_text(n.logs())
                written.append(str(path))
            except Exception as e:
                log.warning("could not collect logs of %s: %s", n.name, e)
        return written


def sweep_run(run_id: str) -> list[str]:
    """One pass over the containers labelled with the run id, then its networks; each
    removal runs even if an earlier one failed. Returns what could not be removed."""
    errors: list[str] = []
    try:
        client = docker_client()
        for c in client.containers.list(all=True, filters={"label": f"{RUN_ID}={run_id}"}):
            try:
                c.remove(force=True, v=True)
            except Exception as e:  # keep going: every other finalizer must still run
                errors.append(f"container {c.name}: {e}")
        for n in client.networks.list(filters={"label": f"{RUN_ID}={run_id}"}):
            try:
                n.remove()
            except Exception as e:
                errors.append(f"network {n.name}: {e}")
    except Exception as e:
        errors.append(f"docker: {e}")
    return errors


def remove_run(run_id: str) -> list[str]:
    """Remove every container and network labelled with the run id, then its mounts (and
    what else lives in its mount directory: a secured cluster's certificates); each step
    runs even if an earlier one failed. Returns what could not be removed."""
    errors = sweep_run(run_id)
    try:
        storage.unmount_run(run_id)
    except Exception as e:
        errors.append(f"mounts: {e}")
    return errors


def _too_few_live_brokers(err: KafkaError) -> bool:
    """INVALID_REPLICATION_FACTOR after validate_topic passed: the spec has enough
    brokers, so some are down or fenced right now (a broker restarting); retry."""
    return err.code() == KafkaError.INVALID_REPLICATION_FACTOR


def kraft_cluster_id() -> str:
    """A random KRaft cluster id, as Kafka's Uuid.randomUuid() makes them: URL-safe
    base64, never starting with '-' (command-line tools would read it as an option)."""
    while True:
        cid = base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")
        if not cid.startswith("-"):
            return cid
