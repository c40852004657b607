"""ExternalCluster: a cluster the harness did not start (staging, Kubernetes, VMs, a
managed service), behind the same protocols as a DockerCluster.

It owns only what it creates. `check()` (before a run starts, and again when the run's
cluster phase makes it) connects within the spec's connect timeout, authenticates,
refuses a topic prefix that some topic already has, and asks Kafka whether the user may
create the run's topics (CreateTopics with validate_only: nothing is made). `create_topic`
refuses a name without the run's prefix; `partitions()` reads only the run's topics (a
Metadata request naming them); `stop()` deletes the topics and consumer groups the run
made unless the spec keeps them. Nothing else of the cluster is written, read or deleted.

The observer reads it through the Admin API (leaders and ISRs of the run's topics) and
the metadata quorum's leader (DescribeQuorum, clusters/kafka_wire.py) where the cluster
answers it; a ZooKeeper-mode cluster's controller comes from DescribeCluster. What the
credentials may not see is kept in `limits()` and reported, and the run goes on.

Its nodes are the spec's `nodes` (names, ids and the fields exec faults' commands
use) or, without them, the brokers the cluster describes (`broker-<id>`, with host and
port). They have no container: faults reach them through the user's own commands
(faults/exec.py).
"""
from __future__ import annotations

import logging
import time
from collections.abc import Iterable

from confluent_kafka import KafkaError, KafkaException
from confluent_kafka.admin import AdminClient, NewTopic

from clusters.admin_retry import AdminError, admin_retry, describe
from clusters.api import BROKER, BROKER_ROLES, CONTROLLER, CONTROLLER_ROLES, PartitionState
from clusters.external_spec import ExternalNode
from clusters.kafka_wire import WireError, WireSecurity, quorum_leader
from clusters.labels import new_run_id
from clusters.spec import ClusterSpec
from core.errors import HarnessError, SpecError

log = logging.getLogger(__name__)
AUTH_CODES = (KafkaError._AUTHENTICATION, KafkaError.SASL_AUTHENTICATION_FAILED)
DENIED_CODES = (KafkaError.TOPIC_AUTHORIZATION_FAILED, KafkaError.CLUSTER_AUTHORIZATION_FAILED,
                KafkaError.GROUP_AUTHORIZATION_FAILED)
CLUSTER_AUTHORIZATION_FAILED = 31


class ExternalBroker:
    """A node of an external cluster: a name, an id and template fields; no container."""

    def __init__(self, spec: ExternalNode):
        self.name, self.role, self.node_id = spec.name, spec.role, spec.node_id
        self.vars = spec.template_vars()

    def __repr__(self) -> str:
        return f"<external {self.role} {self.name} id={self.node_id}>"


class ExternalCluster:
    def __init__(self, spec: ClusterSpec, run_id: str | None = None):
        if spec.external is None:
            raise HarnessError("ExternalCluster needs a spec with cluster.external")
        self.spec, self.external = spec, spec.external
        self.run_id = run_id or new_run_id()
        self.prefix = self.external.prefix_for(self.run_id)
        self._bootstrap, self._conf, self.redact = self.external.settings()
        self._admin: AdminClient | None = None
        self._errors: list[KafkaError] = []
        self._nodes = [ExternalBroker(n) for n in self.external.nodes]
        self._created: list[str] = []
        self._groups: set[str] = set()
        self._limits: dict[str, str] = {}
        # what stop() could not remove ("topic NAME" / "group NAME" -> why), for the report
        self.left_behind: dict[str, str] = {}
        # "kraft", "denied" (KRaft, DescribeQuorum refused), "zookeeper" (DescribeQuorum
        # unanswered), "unknown"
        self._quorum = "unknown"
        self.image, self.network_name, self.started_at = "", None, None

    # -- the Cluster protocol ------------------------------------------------------------
    def __enter__(self) -> "ExternalCluster":
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()

    def start(self, timeout: float | None = None) -> "ExternalCluster":
        self.check([])
        self.started_at = time.monotonic()
        return self

    def stop(self) -> None:
        """Delete what this run made (its topics, its consumer groups) unless kept."""
        if self.external.keep_topics or self._admin is None:
            return
        admin = self.admin()
        if self._created:
            for name, future in admin.delete_topics(list(self._created), operation_timeout=30).items():
                try:
                    future.result(timeout=60)
                    self._created.remove(name)
                except KafkaException as e:
                    log.warning("could not delete topic %s: %s", name, e)
                    self.left_behind[f"topic {name}"] = e.args[0].name()
        if self._groups:
            for group, future in admin.delete_consumer_groups(sorted(self._groups)).items():
                try:
                    future.result(timeout=30)
                except KafkaException as e:       # never joined (nothing to delete), or left
                    log.info("consumer group %s not deleted: %s", group, e)
                    if e.args[0].code() != KafkaError.GROUP_ID_NOT_FOUND:
                        self.left_behind[f"group {group}"] = e.args[0].name()

    def bootstrap_servers(self) -> str:
        return self._bootstrap

    def client_config(self) -> dict[str, str]:
        return dict(self._conf)

    def nodes(self, role: str | Iterable[str] | None = None) -> list:
        if not self._nodes:
            self._nodes = self._described_brokers()
        if role is None:
            return list(self._nodes)
        roles = {role} if isinstance(role, str) else set(role)
        return [n for n in self._nodes if n.role in roles]

    def brokers(self) -> list:
        return self.nodes(BROKER_ROLES)

    def node(self, name_or_id: str | int):
        for n in self.nodes():
            if n.name == name_or_id or (isinstance(name_or_id, int) and n.node_id == name_or_id):
                return n
        if isinstance(name_or_id, int):         # an id the spec's nodes do not list
            node = ExternalBroker(ExternalNode(f"broker-{name_or_id}", name_or_id))
            self._nodes.append(node)
            return node
        raise KeyError(f"no node {name_or_id!r} in the external cluster")

    def broker(self, broker_id: int):
        return self.node(broker_id)

    def create_topic(self, name: str, partitions: int, replication_factor: int,
                     configs: dict[str, str] | None = None, timeout: float = 60) -> None:
        if not name.startswith(self.prefix):
            raise HarnessError(f"refusing to create {name!r} on an external cluster: not under "
                               f"the run's prefix {self.prefix!r}")
        topic = NewTopic(name, partitions, replication_factor, config=dict(configs or {}))

        def create(budget: float) -> None:
            self.admin().create_topics([topic], request_timeout=budget)[name].result(timeout=budget + 5)
        admin_retry(f"creating topic {name!r}", create, timeout)
        self._created.append(name)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            parts = self._describe([name], 5.0)
            if len(parts) == partitions and all(p.leader is not None and len(p.isr) == replication_factor
                                                for p in parts):
                return
            time.sleep(0.5)
        raise HarnessError(f"topic {name!r} has no leader / full ISR after {timeout:.0f} s")

    def claim_group(self, group_id: str) -> None:
        """A consumer group the run uses (deleted with its topics at the end)."""
        self._groups.add(group_id)

    def partitions(self, topic: str | None = None, timeout: float = 10) -> list[PartitionState]:
        """The run's own topics only (another topic, even when named, is never read)."""
        names = [t for t in self._created if topic is None or t == topic]
        return self._describe(names, timeout) if names else []

    def leader_of(self, topic: str, partition: int):
        for p in self.partitions(topic):
            if p.partition == partition:
                return self.broker(p.leader) if p.leader is not None else None
        raise KeyError(f"no partition {topic}-{partition}")

    def active_controller(self):
        """The KRaft quorum leader (DescribeQuorum), or a ZooKeeper-mode cluster's controller
        (DescribeCluster); None when neither can be seen."""
        node_id = self._controller_id()
        if node_id is None:
            return None
        known = next((n for n in self.nodes() if n.node_id == node_id), None)
        if known is None:
            brokers = {b.node_id for b in self._described_brokers()}
            role = BROKER if node_id in brokers else CONTROLLER
            known = ExternalBroker(ExternalNode(f"{role}-{node_id}", node_id, role))
            self._nodes.append(known)
        return known

    def controllers(self) -> list:
        return self.nodes(CONTROLLER_ROLES)

    def wait_healthy(self, timeout: float = 60) -> None:
        deadline = time.monotonic() + timeout
        while True:
            parts = self.partitions(timeout=5)
            if all(p.leader is not None and set(p.isr) == set(p.replicas) for p in parts):
                return
            if time.monotonic() > deadline:
                raise HarnessError(f"the run's topics are not fully in sync after {timeout:.0f} s")
            time.sleep(0.5)

    def collect_logs(self, directory: str) -> list[str]:
        return []            # its nodes' logs are the user's (kubectl logs, journalctl)

    def limits(self) -> dict[str, str]:
        """What the observer could not see, and why (e.g. the controller: no DESCRIBE on
        the cluster)."""
        return dict(self._limits)

    # -- checks before a run ---------------------------------------------------------------
    def admin(self) -> AdminClient:
        if self._admin is None:
            self._admin = AdminClient({"bootstrap.servers": self._bootstrap, **self._conf,
                                       "socket.timeout.ms": 10000, "log_level": 0,
                                       "error_cb": self._errors.append})
        return self._admin

    def check(self, topics: list[tuple[str, int, int]]) -> None:
        """Reachable, credentials accepted, prefix free, allowed to create `topics`
        ((name without prefix, partitions, replication factor)). SpecError naming the field."""
        metadata = self._connect()
        taken = sorted(t for t in metadata.topics if t.startswith(self.prefix))
        if taken:
            raise SpecError(self.external.where("topic_prefix"),
                            f"{len(taken)} topic(s) with the prefix {self.prefix!r} exist already "
                            f"({', '.join(taken[:3])}): a run never touches topics it did not create",
                            "pick another topic_prefix (the default, harness-{run_id}-, is new each "
                            "run), or delete those topics if a past run kept them")
        if topics:
            self._may_create(topics)

    def _connect(self):
        t = self.external.connect_timeout_s
        try:
            return self.admin().list_topics(timeout=t)
        except KafkaException as e:
            self.admin().poll(0.5)            # serve error_cb: the authentication or TLS error
            err = self._worst_error(e)
        raise self._connect_error(err, t)

    def _worst_error(self, e: KafkaException) -> KafkaError | None:
        errors = [x for x in self._errors if isinstance(x, KafkaError)]
        for err in errors:
            if err.code() in AUTH_CODES or "SSL" in err.str():
                return err
        return errors[-1] if errors else (e.args[0] if e.args else None)

    def _connect_error(self, err: KafkaError | None, t: float) -> SpecError:
        text = self.redact(describe(err))
        if err is not None and err.code() in AUTH_CODES:
            return SpecError(self.external.where("client_config"),
                             f"the cluster refused the credentials ({text})",
                             "check sasl.mechanism, sasl.username and sasl.password")
        if err is not None and "SSL" in err.str():
            return SpecError(self.external.where("client_config"), f"TLS failed ({text})",
                             "check ssl.ca.location (the cluster's CA) and the broker addresses")
        return SpecError(self.external.where("bootstrap_servers"),
                         f"no broker answered at {self._bootstrap} within {t:g} s ({text})",
                         "check the address and that this machine reaches it (Kubernetes: the "
                         "external listener, or run the harness in a pod); connect_timeout_s sets the wait")

    def _may_create(self, topics: list[tuple[str, int, int]]) -> None:
        new = [NewTopic(self.prefix + name, p, rf) for name, p, rf in topics]
        futures = self.admin().create_topics(new, validate_only=True, request_timeout=30)
        for name, future in futures.items():
            try:
                future.result(timeout=40)
            except KafkaException as e:
                err = e.args[0] if e.args else None
                if isinstance(err, KafkaError) and err.code() in DENIED_CODES:
                    raise SpecError(self.external.where("client_config"),
                                    f"{self._user()} may not create topics here ({describe(err)})",
                                    self._acl_fix()) from None
                raise SpecError(self.external.where("topic_prefix"),
                                f"Kafka would not create {name}: {describe(err)}",
                                "check the topic's partitions, replication factor and configs") from None

    def _user(self) -> str:
        return self._conf.get("sasl.username", "this principal")

    def _acl_fix(self) -> str:
        """The ACLs a run needs (docs/external.md), on what every run's names start with (not
        this check's own prefix: a run's is new each time)."""
        acl = self.external.acl_prefix()
        where = f"whose names start with {acl!r}" if acl else \
            "whose names start with a fixed part (put one before {run_id} in topic_prefix)"
        return (f"grant {self._user()} Create, Write, Read and Delete on topics and Read and Delete "
                f"on groups {where} (kafka-acls --resource-pattern-type prefixed; docs/external.md), "
                "or use other credentials")

    # -- reading -----------------------------------------------------------------------------
    def _describe(self, names: list[str], timeout: float) -> list[PartitionState]:
        """The run's topics as a Metadata request for each names them, sent to any broker
        that answers (not DescribeTopics: librdkafka sends that to the broker it holds for
        the controller, and a KRaft cluster names a random broker there; once that broker
        is killed or paused, every describe waited until librdkafka learned another, 20 s
        and more, in which the observer saw nothing and selectors waited). A topic the
        answering broker does not know yet is left out."""
        def ask(budget: float):
            return [self.admin().list_topics(topic=name, timeout=budget).topics.get(name)
                    for name in names]
        out = []
        for t in admin_retry("describing the run's topics", ask, timeout, attempt_s=2.0):
            if t is None or t.error is not None:
                continue
            for p in t.partitions.values():
                out.append(PartitionState(t.topic, p.id, p.leader if p.leader >= 0 else None,
                                          tuple(p.replicas), tuple(p.isrs)))
        return sorted(out, key=lambda s: (s.topic, s.partition))

    def _described_brokers(self) -> list[ExternalBroker]:
        try:
            desc = self.admin().describe_cluster(request_timeout=10).result(timeout=15)
        except KafkaException as e:
            raise AdminError(f"describing the cluster failed: {e}") from None
        return [ExternalBroker(ExternalNode(f"broker-{b.id}", b.id, BROKER,
                                            (("host", b.host), ("port", str(b.port)))))
                for b in sorted(desc.nodes, key=lambda b: b.id)]

    def _controller_id(self) -> int | None:
        """Not DescribeCluster on a KRaft cluster: there it names a random broker, not the
        quorum leader (a user without DESCRIBE on the cluster saw the "controller" move at
        each sample). Once DescribeQuorum was refused, it is not asked again."""
        if self._quorum == "denied":
            return None
        if self._quorum != "zookeeper":
            leader = self._quorum_leader()
            if leader is not None or self._quorum in ("kraft", "denied"):
                return leader
        try:
            desc = self.admin().describe_cluster(request_timeout=2).result(timeout=3)
        except KafkaException as e:
            self._limits.setdefault("controller", f"DescribeCluster: {describe(e.args[0])}")
            return None
        return desc.controller.id if desc.controller is not None else None

    def _quorum_leader(self) -> int | None:
        """The KRaft quorum leader from the first broker that answers DescribeQuorum."""
        security = WireSecurity.from_client_config(self._conf)
        if security is None:
            self._limits.setdefault("quorum", "DescribeQuorum: the client settings use a mechanism "
                                    "the harness's own connection does not speak")
            self._quorum = "zookeeper"
            return None
        for server in self._bootstrap.split(","):
            host, _, port = server.rpartition(":")
            try:
                error, leader = quorum_leader(host, int(port), 2.0, security)
            except (OSError, WireError, ValueError, IndexError) as e:
                if isinstance(e, ConnectionError) and self._quorum == "unknown" \
                        and "closed" in str(e):
                    self._quorum = "zookeeper"       # a ZooKeeper-mode broker drops the request
                    return None
                continue
            if error == CLUSTER_AUTHORIZATION_FAILED:     # only KRaft answers it with an error
                self._limits.setdefault("controller", "DescribeQuorum: CLUSTER_AUTHORIZATION_FAILED "
                                        "(the credentials lack DESCRIBE on the cluster)")
                self._quorum = "denied"
                return None
            self._quorum = "kraft"
            return leader
        return None
