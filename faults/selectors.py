"""Selectors choose a fault's targets, separately from what the fault does.

A selector is a small callable `(ctx) -> list[Node]`, evaluated when the fault
is injected (so `leader_of` means the leader *at injection time*). Random
choices use `ctx.rng`, so a seeded run picks the same way given the same
cluster state.

`parse_selector(spec, where)` turns scenario data into a selector: a bare name
(`random_broker`) or a one-key mapping with arguments
(`{leader_of: {topic: t, partition: 0}}`); `selector_refs(spec)` lists the
(topic, partition) pairs a spec names, for checks before any container exists.
"""
from __future__ import annotations

import difflib
import time
from collections.abc import Callable, Iterable
from typing import Any

from clusters.api import BROKER_ROLES, CONTROLLER_ROLES, DOWN_STATES, TOXIPROXY, ZOOKEEPER, Node
from clusters.coordinator import (
    GROUP,
    SHARE,
    SHARE_STATE_TOPIC,
    TRANSACTION,
    CoordinatorError,
    share_key,
    share_state_partition,
)
from clusters.topic_metadata import TopicInfo, TopicMetadataError
from core.errors import SpecError
from faults.base import FaultContext, container_status

Selector = Callable[[FaultContext], list[Node]]


class SelectorError(RuntimeError):
    """A selector found nothing to select (e.g. a partition has no leader)."""


def _named(fn: Selector, name: str) -> Selector:
    fn.__name__ = fn.__qualname__ = name  # type: ignore[attr-defined]
    return fn


def _by_id(ctx: FaultContext, node_ids: Iterable[int]) -> list[Node]:
    return [ctx.cluster.node(i) for i in node_ids]


def kafka_nodes(ctx: FaultContext) -> list[Node]:
    """Every broker and controller (not ZooKeeper, not toxiproxy)."""
    return ctx.cluster.nodes(tuple(set(BROKER_ROLES) | set(CONTROLLER_ROLES)))


def all_nodes(ctx: FaultContext) -> list[Node]:
    """Every node that runs Kafka or ZooKeeper (toxiproxy excluded)."""
    return [n for n in ctx.cluster.nodes() if n.role != TOXIPROXY]


def all_brokers(ctx: FaultContext) -> list[Node]:
    return ctx.cluster.brokers()


def controllers(ctx: FaultContext) -> list[Node]:
    return ctx.cluster.nodes(CONTROLLER_ROLES)


def zookeepers(ctx: FaultContext) -> list[Node]:
    return ctx.cluster.nodes(ZOOKEEPER)


def node(name_or_id: str | int) -> Selector:
    return _named(lambda ctx: [ctx.cluster.node(name_or_id)], f"node({name_or_id!r})")


def leader_of(topic: str, partition: int = 0) -> Selector:
    """The partition's live leader. A partition between leaders (an election after a
    controller kill takes seconds in ZooKeeper mode), or whose named leader's container
    is down (the metadata lags a crash until the controller notices), is waited for, up
    to ctx.leader_wait_s: a nemesis's "bounce the leader" then still happens."""
    def select(ctx: FaultContext) -> list[Node]:
        deadline = time.monotonic() + ctx.leader_wait_s
        while True:
            leader = ctx.cluster.leader_of(topic, partition)
            down = leader is not None and container_status(leader) in DOWN_STATES
            if leader is not None and not down:
                return [leader]
            if time.monotonic() >= deadline:
                named = f" (named: {leader.name}, down)" if down else ""
                raise SelectorError(f"{topic}-{partition} has had no live leader for "
                                    f"{ctx.leader_wait_s:g} s{named}")
            time.sleep(0.25)
    return _named(select, f"leader_of({topic!r}, {partition})")


def followers_of(topic: str, partition: int = 0) -> Selector:
    """The partition's replicas other than its current leader."""
    def select(ctx: FaultContext) -> list[Node]:
        for state in ctx.cluster.partitions(topic):
            if state.partition == partition:
                return _by_id(ctx, [r for r in state.replicas if r != state.leader])
        raise SelectorError(f"no partition {topic}-{partition}")
    return _named(select, f"followers_of({topic!r}, {partition})")


def one_follower_of(topic: str, partition: int = 0) -> Selector:
    def select(ctx: FaultContext) -> list[Node]:
        followers = followers_of(topic, partition)(ctx)
        if not followers:
            raise SelectorError(f"{topic}-{partition} has no followers")
        return [ctx.rng.choice(followers)]
    return _named(select, f"one_follower_of({topic!r}, {partition})")


def in_sync_follower_of(topic: str, partition: int = 0) -> Selector:
    """One follower still in the partition's ISR (seeded choice): stopping followers
    one by one with it leaves the leader alone in the ISR, never re-picking one
    already stopped."""
    def select(ctx: FaultContext) -> list[Node]:
        for state in ctx.cluster.partitions(topic):
            if state.partition == partition:
                in_sync = [r for r in state.isr if r != state.leader]
                if not in_sync:
                    raise SelectorError(f"{topic}-{partition} has no follower in its ISR "
                                        f"(ISR {list(state.isr)}, leader {state.leader})")
                return _by_id(ctx, [ctx.rng.choice(sorted(in_sync))])
        raise SelectorError(f"no partition {topic}-{partition}")
    return _named(select, f"in_sync_follower_of({topic!r}, {partition})")


def active_controller(ctx: FaultContext) -> list[Node]:
    """The active controller: the KRaft quorum leader, or the ZooKeeper-mode controller broker."""
    controller = ctx.cluster.active_controller()
    if controller is None:
        raise SelectorError("the cluster reports no active controller")
    return [controller]


def zookeeper_mode(node: Node) -> str | None:
    """'leader', 'follower', 'standalone' or None, from ZooKeeper's `srvr` command."""
    # bash's /dev/tcp needs no nc in the image; `srvr` must be in 4lw.commands.whitelist.
    script = ("exec 3<>/dev/tcp/127.0.0.1/2181 && printf srvr >&3 && timeout 3 cat <&3")
    result = node.exec(["bash", "-c", script])
    for line in result.output.splitlines():
        if line.startswith("Mode:"):
            return line.split(":", 1)[1].strip()
    return None


def zookeeper_leader(ctx: FaultContext) -> list[Node]:
    for zk in zookeepers(ctx):
        if zk.is_running() and zookeeper_mode(zk) in ("leader", "standalone"):
            return [zk]
    raise SelectorError("no ZooKeeper node reports Mode: leader")


def quorum_leader(ctx: FaultContext) -> list[Node]:
    """Leader of the metadata quorum: the KRaft leader, or the ZooKeeper leader in ZooKeeper mode."""
    if ctx.cluster.nodes(CONTROLLER_ROLES):
        return active_controller(ctx)
    return zookeeper_leader(ctx)


def random_broker(ctx: FaultContext) -> list[Node]:
    brokers = all_brokers(ctx)
    if not brokers:
        raise SelectorError("the cluster has no brokers")
    return [ctx.rng.choice(brokers)]


def random_of(pool: Selector, count: int = 1) -> Selector:
    def select(ctx: FaultContext) -> list[Node]:
        nodes = pool(ctx)
        return ctx.rng.sample(nodes, min(count, len(nodes)))
    return _named(select, f"random_of({getattr(pool, '__name__', pool)}, {count})")


def split(nodes: list[Node], ctx: FaultContext) -> tuple[list[Node], list[Node]]:
    """A random (minority, majority) split: the minority is the largest group
    strictly smaller than half (at least one node)."""
    shuffled = list(nodes)
    ctx.rng.shuffle(shuffled)
    size = max(1, (len(shuffled) - 1) // 2)
    return shuffled[:size], shuffled[size:]


def _pool_suffix(pool: Selector) -> str:
    return "" if pool is all_nodes else f"({getattr(pool, '__name__', pool)})"


def minority(pool: Selector = all_nodes) -> Selector:
    return _named(lambda ctx: split(pool(ctx), ctx)[0], f"minority{_pool_suffix(pool)}")


def majority(pool: Selector = all_nodes) -> Selector:
    return _named(lambda ctx: split(pool(ctx), ctx)[1], f"majority{_pool_suffix(pool)}")


def exclude_role(pool: Selector, role: str) -> Selector:
    return _named(lambda ctx: [n for n in pool(ctx) if n.role != role],
                  f"exclude_role({role})")


def txn_coordinator_of(producer: str) -> Selector:
    """The broker coordinating a transactional producer's transactions (FindCoordinator
    for its transactional.id, at injection): pause or slow it while the partition
    leaders stay fast, or the other way round."""
    def select(ctx: FaultContext) -> list[Node]:
        txn_id = ctx.transactional_ids.get(producer)
        if txn_id is None and producer in ctx.transactional_id_prefixes:
            txn_id = _listed_txn_id(ctx, producer, *ctx.transactional_id_prefixes[producer])
        if txn_id is None:
            known = sorted(ctx.transactional_ids) + sorted(ctx.transactional_id_prefixes)
            raise SelectorError(f"producer {producer!r} has no transactional.id in this run "
                                f"(transactional: {known or 'none'})")
        ctx.note_selection(transactional_id=txn_id)
        return _coordinator(ctx, txn_id, TRANSACTION)
    return _named(select, f"txn_coordinator_of({producer!r})")


def _listed_txn_id(ctx: FaultContext, slot: str, prefix: str, number: int) -> str:
    """The number-th (sorted, modulo how many) transactional id starting with `prefix`
    that the brokers list now: a Kafka Streams instance's, whose id (<application.id>-
    <processId>-<thread>) the harness does not choose, so which instance it is is not
    known; the fault's detail names the id."""
    ids, missing = ctx.listed_transactional_ids()
    ours = [t for t in ids if t.startswith(prefix)]
    if not ours:
        raise SelectorError(f"no broker lists a transactional id starting {prefix!r} for "
                            f"{slot!r} (not answering: {missing or 'none'})")
    return ours[number % len(ours)]


def group_coordinator_of(group: str) -> Selector:
    """The broker coordinating a consumer group (FindCoordinator, at injection)."""
    return _named(lambda ctx: _coordinator(ctx, group, GROUP), f"group_coordinator_of({group!r})")


def _coordinator(ctx: FaultContext, key: str, key_type: int) -> list[Node]:
    try:
        return [ctx.cluster.node(ctx.coordinator_of(key, key_type))]
    except (CoordinatorError, KeyError) as e:
        raise SelectorError(f"the coordinator of {key!r}: {e}") from None


def share_coordinator_of(group: str, topic: str | None = None, partition: int = 0) -> Selector:
    """The share coordinator of one share-partition (KIP-932): the broker that persists
    group `group`'s state of `topic`-`partition` (the leader of its `__share_group_state`
    partition), found at injection with FindCoordinator v6, key type SHARE. `topic` None:
    the group's first topic. FindCoordinator needs CLUSTER_ACTION: a cluster that refuses
    it gets the broker's own computation (share_state_partition, then that partition's
    leader), and the fault's detail says so (`share_coordinator.via`).

    The share-partition *leader* (which holds the in-flight records) is `leader_of` the
    topic partition: no selector of its own."""
    def select(ctx: FaultContext) -> list[Node]:
        name = topic or _first_share_topic(ctx, group)
        meta = _share_metadata(ctx, name, partition)
        key = share_key(group, meta[name].topic_id, partition)
        state = meta.get(SHARE_STATE_TOPIC)
        local = _local_share_coordinator(key, state)
        note = {"group": group, "topic": name, "partition": partition, "key": key,
                "state_partition": local[0] if local else None,
                "state_partition_leader": local[1] if local else None}
        try:
            node_id, note["via"] = ctx.coordinator_of(key, SHARE), "FindCoordinator v6"
        except CoordinatorError as e:
            if e.error_code is None or local is None or local[1] is None:
                raise SelectorError(f"the share coordinator of {key!r}: {e}"
                                    + _no_fallback(state, local)) from None
            node_id, note["via"] = local[1], f"local computation (FindCoordinator refused: {e})"
        ctx.note_selection(share_coordinator=note)
        try:
            return [ctx.cluster.node(node_id)]
        except KeyError as e:
            raise SelectorError(f"the share coordinator of {key!r}: {e}") from None
    suffix = "" if topic is None else f", {topic!r}, {partition}"
    return _named(select, f"share_coordinator_of({group!r}{suffix})")


def _first_share_topic(ctx: FaultContext, group: str) -> str:
    topics = ctx.share_group_topics.get(group)
    if not topics:
        raise SelectorError(f"share group {group!r} has no topics in this run (share groups: "
                            f"{sorted(ctx.share_group_topics) or 'none'}); name one: "
                            f"{{share_coordinator_of: {{group: {group}, topic: <topic>}}}}")
    return topics[0]


def _share_metadata(ctx: FaultContext, topic: str, partition: int) -> dict[str, TopicInfo]:
    """The topic's id (and `__share_group_state`'s leaders), or SelectorError."""
    try:
        meta = ctx.topic_metadata([topic, SHARE_STATE_TOPIC])
    except TopicMetadataError as e:
        raise SelectorError(f"the id of topic {topic!r}: {e}") from None
    info = meta.get(topic)
    if info is None or info.error:
        raise SelectorError(f"topic {topic!r} is not in the cluster's metadata"
                            + (f" (error {info.error})" if info else ""))
    if partition not in info.leaders:
        raise SelectorError(f"topic {topic!r} has no partition {partition} "
                            f"(partitions: {sorted(info.leaders)})")
    return meta


def _local_share_coordinator(key: str, state: TopicInfo | None) -> tuple[int, int | None] | None:
    """(the `__share_group_state` partition of `key`, its leader), as the broker computes
    it; None while that topic does not exist (the first FindCoordinator creates it)."""
    if state is None or state.error or not state.leaders:
        return None
    p = share_state_partition(key, len(state.leaders))
    return p, state.leaders.get(p)


def _no_fallback(state: TopicInfo | None, local: tuple[int, int | None] | None) -> str:
    if local is None:
        return f" (and no local computation: {SHARE_STATE_TOPIC} does not exist yet)"
    if local[1] is None:
        return f" (and no local computation: {SHARE_STATE_TOPIC}-{local[0]} has no leader)"
    return ""



# -- selectors as data (scenario YAML) ---------------------------------------------
BARE_SELECTORS: dict[str, Selector] = {
    "active_controller": active_controller, "quorum_leader": quorum_leader,
    "zookeeper_leader": zookeeper_leader, "random_broker": random_broker,
    "all_brokers": all_brokers, "all_nodes": all_nodes, "kafka_nodes": kafka_nodes,
    "controllers": controllers, "zookeepers": zookeepers,
    "minority": minority(), "majority": majority(),
}
PARTITION_SELECTORS = ("leader_of", "followers_of", "one_follower_of", "in_sync_follower_of")
# Mapping forms and how to write them (for error messages).
SELECTOR_FORMS: dict[str, str] = {
    **{name: f"{{{name}: {{topic: <topic>, partition: 0}}}}" for name in PARTITION_SELECTORS},
    "node": "{node: kafka-1} or {node: 2}",
    "minority": "{minority: {pool: <selector>}}",
    "majority": "{majority: {pool: <selector>}}",
    "random_of": "{random_of: {pool: <selector>, count: 2}}",
    "txn_coordinator_of": "{txn_coordinator_of: {producer: p0}}",
    "group_coordinator_of": "{group_coordinator_of: {group: g0}}",
    "share_coordinator_of": "{share_coordinator_of: {group: g0, topic: <topic>, partition: 0}}",
}
SELECTOR_NAMES: tuple[str, ...] = tuple(sorted(set(BARE_SELECTORS) | set(SELECTOR_FORMS)))


def _unknown(name: Any, where: str) -> SpecError:
    close = difflib.get_close_matches(str(name), SELECTOR_NAMES, n=1)
    hint = f"did you mean {close[0]!r}? " if close else ""
    return SpecError(where, f"unknown selector {name!r}",
                     f"{hint}use one of {', '.join(SELECTOR_NAMES)}")


def _args(args: Any, where: str, name: str, allowed: tuple[str, ...]) -> dict:
    """A selector's argument mapping (None: no arguments), with no unknown keys."""
    if args is None:
        return {}
    if not isinstance(args, dict):
        raise SpecError(where, f"arguments must be a mapping of {', '.join(allowed)}, "
                               f"got {args!r}", f"write {SELECTOR_FORMS[name]}")
    for key in args:
        if key not in allowed:
            raise SpecError(f"{where}.{key}", f"unknown argument {key!r}",
                            f"use {', '.join(allowed)}")
    return args


def _int_arg(args: dict, key: str, where: str, default: int, minimum: int) -> int:
    value = args.get(key, default)
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise SpecError(f"{where}.{key}", f"must be an integer >= {minimum}, got {value!r}")
    return value


def _topic_partition(args: Any, where: str, name: str) -> tuple[str, int]:
    args = _args(args, where, name, ("topic", "partition"))
    topic = args.get("topic")
    if not isinstance(topic, str) or not topic:
        problem = "is required" if topic is None else f"must be a topic name, got {topic!r}"
        raise SpecError(f"{where}.topic", problem, "name one of the scenario's topics")
    return topic, _int_arg(args, "partition", where, default=0, minimum=0)


def _parse_node(args: Any, where: str) -> Selector:
    if isinstance(args, bool) or not isinstance(args, (str, int)) or args == "":
        raise SpecError(where, f"must be a node name or id, got {args!r}",
                        f"write {SELECTOR_FORMS['node']}")
    return node(args)


def _parse_split(side: Callable[[Selector], Selector], name: str) -> Callable[[Any, str], Selector]:
    def parse(args: Any, where: str) -> Selector:
        args = _args(args, where, name, ("pool",))
        pool = parse_selector(args["pool"], f"{where}.pool") if "pool" in args else all_nodes
        return side(pool)
    return parse


def _parse_random_of(args: Any, where: str) -> Selector:
    args = _args(args, where, "random_of", ("pool", "count"))
    if "pool" not in args:
        raise SpecError(f"{where}.pool", "is required", f"write {SELECTOR_FORMS['random_of']}")
    pool = parse_selector(args["pool"], f"{where}.pool")
    return random_of(pool, _int_arg(args, "count", where, default=1, minimum=1))


def _client_name(args: Any, where: str, name: str, key: str) -> str:
    value = _args(args, where, name, (key,)).get(key)
    if not isinstance(value, str) or not value:
        problem = "is required" if value is None else f"must be a name, got {value!r}"
        raise SpecError(f"{where}.{key}", problem, f"write {SELECTOR_FORMS[name]}")
    return value


# The client a coordinator selector names: (selector, the argument naming it).
CLIENT_SELECTORS = {"txn_coordinator_of": "producer", "group_coordinator_of": "group",
                    "share_coordinator_of": "group"}
# What kind of client each one's argument names (a consumer group is not a share group).
CLIENT_KINDS = {"txn_coordinator_of": "transactional producer",
                "group_coordinator_of": "consumer group", "share_coordinator_of": "share group"}


def selector_clients(spec: Any) -> list[tuple[str, str]]:
    """The (argument, name) pairs a selector spec names (`producer`, `p0`), so a scenario
    can be checked against its workload before any container exists."""
    return [(key, name) for _selector, key, name in selector_client_refs(spec)]


def selector_client_refs(spec: Any) -> list[tuple[str, str, str]]:
    """(selector, argument, name) for each client a selector spec names, pools included:
    ("share_coordinator_of", "group", "orders-2"). CLIENT_KINDS[selector] says whether
    the name is a consumer group, a share group or a transactional producer."""
    if not isinstance(spec, dict) or len(spec) != 1:
        return []
    (name, args), = spec.items()
    if not isinstance(args, dict):
        return []
    key = CLIENT_SELECTORS.get(name)
    if key is not None:
        return [(name, key, args[key])] if isinstance(args.get(key), str) else []
    return selector_client_refs(args.get("pool"))


def _parse_share_coordinator_of(args: Any, where: str) -> Selector:
    name = "share_coordinator_of"
    args = _args(args, where, name, ("group", "topic", "partition"))
    group = _client_name({"group": args.get("group")}, where, name, "group")
    topic = args.get("topic")
    if topic is not None and (not isinstance(topic, str) or not topic):
        raise SpecError(f"{where}.topic", f"must be a topic name, got {topic!r}",
                        "name one of the share group's topics, or leave it out for its first")
    return share_coordinator_of(group, topic, _int_arg(args, "partition", where, default=0, minimum=0))


_PARSERS: dict[str, Callable[[Any, str], Selector]] = {
    "leader_of": lambda a, w: leader_of(*_topic_partition(a, w, "leader_of")),
    "followers_of": lambda a, w: followers_of(*_topic_partition(a, w, "followers_of")),
    "one_follower_of": lambda a, w: one_follower_of(*_topic_partition(a, w, "one_follower_of")),
    "in_sync_follower_of": lambda a, w: in_sync_follower_of(
        *_topic_partition(a, w, "in_sync_follower_of")),
    "node": _parse_node,
    "minority": _parse_split(minority, "minority"),
    "majority": _parse_split(majority, "majority"),
    "random_of": _parse_random_of,
    "txn_coordinator_of": lambda a, w: txn_coordinator_of(_client_name(a, w, "txn_coordinator_of",
                                                                       "producer")),
    "group_coordinator_of": lambda a, w: group_coordinator_of(
        _client_name(a, w, "group_coordinator_of", "group")),
    "share_coordinator_of": _parse_share_coordinator_of,
}


def parse_selector(spec: Any, where: str) -> Selector:
    """A selector from scenario data; SpecError naming `where` (and the argument) if bad.
    A selector (a callable) passes through unchanged."""
    if callable(spec):
        return spec
    if isinstance(spec, str):
        if spec in BARE_SELECTORS:
            return BARE_SELECTORS[spec]
        if spec in SELECTOR_FORMS:
            raise SpecError(where, f"selector {spec!r} needs arguments",
                            f"write {SELECTOR_FORMS[spec]}")
        raise _unknown(spec, where)
    if isinstance(spec, dict):
        if len(spec) != 1:
            raise SpecError(where, f"a selector mapping has exactly one key, got "
                                   f"{sorted(map(str, spec)) or 'none'}",
                            "e.g. {leader_of: {topic: t, partition: 0}}")
        (name, args), = spec.items()
        if name not in _PARSERS:
            raise _unknown(name, where)
        return _PARSERS[name](args, f"{where}.{name}")
    raise SpecError(where, f"a selector is a name or a one-key mapping, got {spec!r}",
                    "e.g. random_broker or {leader_of: {topic: t, partition: 0}}")


def selector_refs(spec: Any) -> list[tuple[str, int]]:
    """The (topic, partition) pairs a selector spec names, pools included, so a
    scenario can be checked against its topics before any container exists.
    Malformed parts name nothing here (parse_selector reports them)."""
    if not isinstance(spec, dict) or len(spec) != 1:
        return []
    (name, args), = spec.items()
    if not isinstance(args, dict):
        return []
    if name in PARTITION_SELECTORS or (name == "share_coordinator_of" and "topic" in args):
        topic, partition = args.get("topic"), args.get("partition", 0)
        if isinstance(topic, str) and isinstance(partition, int) and not isinstance(partition, bool):
            return [(topic, partition)]
        return []
    return selector_refs(args.get("pool"))
