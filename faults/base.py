"""The fault protocol, the context faults run in, and the bookkeeping every
fault shares: a `fault_id`, a `fault` event on injection and a `heal` event
with the same detail when healed.

A fault is `name` + `inject(ctx)` + `heal(ctx)`. `heal` is idempotent and must
be safe for a fault whose `inject` failed half-way, so `inject` registers the
fault as active *before* it touches anything. Faults never touch data.

Its rows carry it in words for people reading a report (`description`: "kafka-2 cut
off from every other node; clients still reach it"), written by its `words`: its
kind's (faults/catalog.py sets them on every fault a kind builds), else its name and
targets.
"""
from __future__ import annotations

import dataclasses
import logging
import random
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

from clusters.api import Cluster, Node
from clusters.coordinator import find_coordinator, list_transactions
from clusters.kafka_wire import WireSecurity
from clusters.topic_metadata import TopicInfo, describe_topics
from core.history import EventLog, now_us

log = logging.getLogger(__name__)


@runtime_checkable
class Fault(Protocol):
    name: str

    def inject(self, ctx: "FaultContext") -> None: ...
    def heal(self, ctx: "FaultContext") -> None: ...


@dataclass
class FaultContext:
    """What faults need: the cluster, where to record, a seeded rng, and the
    cluster facts faults depend on (log dir, client addresses, tool paths)."""

    cluster: Cluster
    events: EventLog | None = None
    rng: random.Random = field(default_factory=lambda: random.Random(0))
    # Absolute path of each broker's Kafka log dir inside its container.
    log_dir: str = "/var/lib/kafka/data"
    # How to run a Kafka tool class inside a node (the images ship jars, no bin/ scripts).
    kafka_java: str = "java -Xmx256m -cp '/opt/kafka/libs/*'"
    # Bootstrap address of a broker's client listener as seen from inside its container.
    internal_bootstrap: str = "localhost:9092"
    # Source addresses client traffic arrives from (None: each node's default gateway).
    client_ips: tuple[str, ...] | None = None
    # Optional toxiproxy adapter (faults.toxiproxy_adapter.ToxiproxyAdapter).
    toxiproxy: Any = None
    # How long faults wait for the cluster to react (new controller, full ISR …).
    settle_timeout_s: float = 60.0
    # How long a leader_of selector waits for a partition between leaders.
    leader_wait_s: float = 15.0
    # Each transactional producer's transactional.id, by producer name (the run fills
    # it in when its workloads start): what `txn_coordinator_of` asks about.
    transactional_ids: dict[str, str] = field(default_factory=dict)
    # A client that chooses its own transactional.ids (a Kafka Streams pipeline's
    # instance slot): slot -> (the ids' prefix, the slot's number); `txn_coordinator_of`
    # takes the number-th (sorted) id of that prefix the brokers list (ListTransactions).
    transactional_id_prefixes: dict[str, tuple[str, int]] = field(default_factory=dict)
    # ListTransactions over the brokers as () -> (sorted ids, brokers not answering); None:
    # ask the cluster's brokers (clusters.coordinator). Tests put a fake answer here.
    transactions_lookup: Callable[[], tuple[list[str], list[str]]] | None = None
    # FindCoordinator as (key, key_type) -> broker id; None: ask the cluster's brokers
    # (clusters.coordinator). Tests put a fake answer here.
    coordinator_lookup: Callable[[str, int], int] | None = None
    # Each share group's topics, by group id, in the order it subscribes (the run fills it
    # in): the topic `share_coordinator_of: {group: g}` means when it names none.
    share_group_topics: dict[str, list[str]] = field(default_factory=dict)
    # Metadata (topic ids, leaders) as topics -> {name: TopicInfo}; None: ask the
    # cluster's brokers (clusters.topic_metadata). Tests put a fake answer here.
    topic_metadata_lookup: Callable[[list[str]], dict[str, TopicInfo]] | None = None
    # The run's other clusters' contexts, by name (a mirror's `target`): where a fault
    # whose selector says `cluster: target` acts (`on`). Filled in by the run.
    others: dict[str, "FaultContext"] = field(default_factory=dict)
    # Processes the run's families run beside the clusters that a fault may stop, by
    # name (`mirror-maker`: kill(), restart(), pause(), unpause(), name). Filled in by the run.
    processes: dict[str, Any] = field(default_factory=dict)
    # Faults injected and not yet healed, by fault_id, in injection order.
    active: dict[str, "BaseFault"] = field(default_factory=dict)
    heal_all_runs: int = 0
    _lock: threading.RLock = field(default_factory=threading.RLock, repr=False)
    # What the selectors of the fault being injected on this thread noted (note_selection)
    _notes: threading.local = field(default_factory=threading.local, repr=False)

    def on(self, cluster: str | None) -> "FaultContext":
        """The context of the run's cluster `cluster` (None: this one), sharing this
        one's bookkeeping (active faults, events, rng), so heal-all heals a fault on
        another cluster as on this one."""
        if cluster is None:
            return self
        other = self.others.get(cluster)
        if other is None:
            raise RuntimeError(f"this run has no {cluster} cluster (known: "
                               f"{', '.join(self.others) or 'none'})")
        return dataclasses.replace(other, events=self.events, rng=self.rng, active=self.active,
                                   _lock=self._lock, _notes=self._notes, others=self.others,
                                   processes=self.processes)

    def coordinator_of(self, key: str, key_type: int) -> int:
        """The broker id FindCoordinator names for a transactional.id or a group, now."""
        if self.coordinator_lookup is not None:
            return self.coordinator_lookup(key, key_type)
        security = WireSecurity.from_client_config(self.cluster.client_config())
        return find_coordinator(self.cluster.bootstrap_servers(), key, key_type,
                                timeout_s=self.leader_wait_s, security=security).node_id

    def listed_transactional_ids(self) -> tuple[list[str], list[str]]:
        """The transactional ids the brokers coordinate now, sorted, and the brokers that
        did not answer (ListTransactions, each broker once)."""
        if self.transactions_lookup is not None:
            return self.transactions_lookup()
        security = WireSecurity.from_client_config(self.cluster.client_config())
        return list_transactions(self.cluster.bootstrap_servers(), security=security)

    def topic_metadata(self, topics: list[str]) -> dict[str, TopicInfo]:
        """Each topic's id and partition leaders, now (Metadata v12, any broker)."""
        if self.topic_metadata_lookup is not None:
            return self.topic_metadata_lookup(topics)
        security = WireSecurity.from_client_config(self.cluster.client_config())
        return describe_topics(self.cluster.bootstrap_servers(), topics,
                               timeout_s=self.leader_wait_s, security=security)

    def note_selection(self, **detail: Any) -> None:
        """A selector's word on how it chose (e.g. a fallback it took): the fault being
        injected on this thread puts it in its detail."""
        stack = getattr(self._notes, "stack", None)
        if stack:
            stack[-1].update(detail)

    def begin_selection_notes(self) -> None:
        if getattr(self._notes, "stack", None) is None:
            self._notes.stack = []
        self._notes.stack.append({})

    def end_selection_notes(self) -> dict[str, Any]:
        stack = getattr(self._notes, "stack", None)
        return stack.pop() if stack else {}

    def emit(self, kind: str, name: str, target: str | None = None, **detail: Any) -> None:
        if self.events is not None:
            self.events.emit(kind, name, target, **detail)
            # Fault timelines are read by people watching a crashed run: flush now.
            self.events.flush()


def target_names(nodes: list[Node]) -> str:
    return ",".join(n.name for n in nodes)


# A fault in one clause, from its name, its target node names and its detail.
Words = Callable[[str, list[str], dict[str, Any]], str]


def nodes_in_words(names: list[str]) -> str:
    return ", ".join(names) if names else "no node"


def name_and_targets(name: str, names: list[str], detail: dict[str, Any]) -> str:
    """The words of a fault whose kind has none of its own: "exec on kafka-1"."""
    return f"{name} on {nodes_in_words(names)}"


class BaseFault:
    """Shared bookkeeping. Subclasses implement `_inject` and `_heal`, and put
    what the reconciler or a person needs to know into `self.detail`.

    One instance is one fault occurrence: its fault_id is fixed at injection;
    injecting an instance twice is an error (create a new one).
    """

    name: str = "fault"

    def __init__(self) -> None:
        self.fault_id: str | None = None
        self.detail: dict[str, Any] = {}
        self.targets: list[Node] = []
        self.injected_at_us: int | None = None
        self.healed = False
        # What heal saw (e.g. whether the broker survived a full disk); heal row only.
        self.heal_notes: dict[str, Any] = {}
        # When the heal took effect, if not when it returned (a supervised start
        # waits for the broker to run; the heal is the start that held).
        self.healed_at_us: int | None = None
        # When set, inject() holds the fault this long and then heals it itself
        # (a pause held for N seconds, a kill restarted after N seconds).
        self.heal_after_s: float | None = None
        # The scenario's name for this fault ("timeline[1] partition"), set by whoever
        # planned it; the report calls the fault so.
        self.label: str | None = None
        # What its rows say it did (`description`); its kind sets its own.
        self.words: Words = name_and_targets
        # The run's cluster it acts on (a selector's `cluster: target`); None: the run's own
        self.cluster_name: str | None = None

    # -- protocol --------------------------------------------------------
    def inject(self, ctx: FaultContext) -> None:
        if self.fault_id is not None:
            raise RuntimeError(f"fault {self.name} {self.fault_id} was already injected")
        ctx = ctx.on(self.cluster_name)
        self.fault_id = f"{self.name}-{uuid.uuid4().hex[:10]}"
        self.injected_at_us = now_us()
        with ctx._lock:
            ctx.active[self.fault_id] = self   # registered first: heal-all sees it even if inject dies
        ctx.begin_selection_notes()
        try:
            self._inject(ctx)
        except BaseException as e:
            self.detail["inject_error"] = f"{type(e).__name__}: {e}"
            raise
        finally:
            # how its selectors chose (a coordinator computed locally, not asked)
            self.detail.update(ctx.end_selection_notes())
            # The fault row is written even when inject failed half-way, so the
            # heal row that follows always has its partner.
            # inject_s: how long the inject took (two kills, a rolling restart): the
            # fault was wholly in effect only from its end
            ctx.emit("fault", self.name, target_names(self.targets) or None,
                     ts_us=self.injected_at_us, **self._event_detail(),
                     inject_s=round((now_us() - self.injected_at_us) / 1e6, 6))
        if self.heal_after_s is not None:
            time.sleep(self.heal_after_s)
            self.heal(ctx)

    def heal(self, ctx: FaultContext) -> None:
        """Undo the fault. Idempotent. The `heal` row is written only once the
        heal succeeded; a failed heal raises and leaves the fault active, so
        heal-all retries it (and records it as unhealed if it never succeeds).
        Each failed attempt writes a `heal` row with `heal_error` (and no other heal
        detail): the verdict counts the fault among the fault_errors."""
        if self.fault_id is None or self.healed:
            return
        ctx = ctx.on(self.cluster_name)
        try:
            self._heal(ctx)
        except Exception as e:
            ctx.emit("heal", self.name, target_names(self.targets) or None,
                     fault_id=self.fault_id, label=self.label or self.name,
                     heal_error=f"{type(e).__name__}: {e}")
            raise
        self.healed = True
        with ctx._lock:
            ctx.active.pop(self.fault_id, None)
        healed_at_us = self.healed_at_us or now_us()
        detail = {**self.heal_notes, **self._event_detail(), "duration_s": round(
            (healed_at_us - (self.injected_at_us or healed_at_us)) / 1e6, 3)}
        ctx.emit("heal", self.name, target_names(self.targets) or None, ts_us=healed_at_us,
                 **detail)

    # -- for subclasses --------------------------------------------------
    def _inject(self, ctx: FaultContext) -> None:
        raise NotImplementedError

    def _heal(self, ctx: FaultContext) -> None:
        raise NotImplementedError

    def _event_detail(self) -> dict[str, Any]:
        where = {"cluster": self.cluster_name} if self.cluster_name else {}
        return {"fault_id": self.fault_id, **self.detail, **where, "label": self.label or self.name,
                "description": self.words(self.name, [n.name for n in self.targets], self.detail)}

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.name} {self.fault_id or 'not injected'}>"


def wait_until(predicate: Callable[[], Any], timeout_s: float, interval_s: float = 0.5,
               what: str = "condition") -> Any:
    """Poll `predicate` until it returns something truthy; raise TimeoutError."""
    deadline = time.monotonic() + timeout_s
    last_error: Exception | None = None
    while True:
        try:
            value = predicate()
            if value:
                return value
        except Exception as e:  # noqa: BLE001 - the cluster is under faults; keep polling
            last_error = e
        if time.monotonic() >= deadline:
            suffix = f" (last error: {last_error})" if last_error else ""
            raise TimeoutError(f"timed out after {timeout_s:.0f}s waiting for {what}{suffix}")
        time.sleep(interval_s)


def wait_full_isr(cluster: Cluster, timeout_s: float = 60, topic: str | None = None) -> None:
    """Wait until every partition has a leader and its ISR equals its replicas."""
    def full() -> bool:
        states = cluster.partitions(topic)
        return all(
            s.leader is not None and set(s.isr) == set(s.replicas) for s in states)
    wait_until(full, timeout_s, what=f"full ISR on {topic or 'all topics'}")


class FaultError(RuntimeError):
    """A fault could not be injected or healed as asked."""


def container_status(node: Node) -> str | None:
    """'running', 'paused', 'exited' … from the node's own container, or None for a
    node that cannot say. Asked of the node object (DockerNode.status() reloads the
    container it made), never looked up by `node.name`: that is the node's network
    alias (`kafka-1`), not its container's name (`kh-<run>-<cluster>-kafka-1`)."""
    status = getattr(node, "status", None)
    if status is None:
        return None
    try:
        return status()
    except Exception:  # noqa: BLE001 - a node that cannot answer: the caller decides
        return None


def sh(node: Node, script: str, check: bool = True) -> str:
    """Run a shell script in a node's container as root; return its output."""
    result = node.exec(["sh", "-c", script])
    if check and result.exit_code != 0:
        raise FaultError(f"{node.name}: `{script}` exited {result.exit_code}: "
                         f"{result.output.strip()[-500:]}")
    return result.output
