"""Selectors choose a fault's targets, separately from what the fault does.

A selector is a small callable `(ctx) -> list[Node]`, evaluated when the fault
is injected (so `leader_of` means the leader *at injection time*). Random
choices use `ctx.rng`, so a seeded run picks the same way given the same
cluster state.
"""
from __future__ import annotations

from typing import Callable, Iterable

from clusters.api import BROKER_ROLES, CONTROLLER_ROLES, TOXIPROXY, ZOOKEEPER, Node
from faults.base import FaultContext

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
    def select(ctx: FaultContext) -> list[Node]:
        leader = ctx.cluster.leader_of(topic, partition)
        if leader is None:
            raise SelectorError(f"{topic}-{partition} has no leader")
        return [leader]
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


def minority(pool: Selector = all_nodes) -> Selector:
    return _named(lambda ctx: split(pool(ctx), ctx)[0], "minority")


def majority(pool: Selector = all_nodes) -> Selector:
    return _named(lambda ctx: split(pool(ctx), ctx)[1], "majority")


def exclude_role(pool: Selector, role: str) -> Selector:
    return _named(lambda ctx: [n for n in pool(ctx) if n.role != role],
                  f"exclude_role({role})")

