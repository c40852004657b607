"""Network partitions with iptables inside the containers.

No netem on this kernel, so partitions are silent drops: a node drops INPUT
from every address it holds a grudge against, on both sides, and peers time
out as they would in a real partition (no RST, no ICMP).

Every rule lives in a dedicated chain, HARNESS, jumped to from INPUT. Healing
one fault deletes exactly the rules it added (so overlapping partitions
compose); `flush_all` empties the chain, which is what the crash-time sweep
does. A container restart starts a fresh network namespace, so a stopped
container keeps no rules either.

A *grudge* maps each node name to the source addresses it drops; shapes are
pure functions from nodes to a grudge (unit-tested without Docker).
"""
from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from clusters.api import DOWN_STATES, Node
from faults.base import (
    BaseFault,
    FaultContext,
    FaultError,
    container_status,
    nodes_in_words,
    sh,
)
from faults.selectors import Selector, all_brokers, all_nodes, leader_of, split

CHAIN = "HARNESS"

Grudge = dict[str, tuple[str, ...]]     # node name -> source IPs it drops


# -- iptables command text (pure) ------------------------------------------
def setup_script() -> str:
    """Create the chain and the INPUT jump, both only if missing."""
    return (f"iptables -w -N {CHAIN} 2>/dev/null; "
            f"iptables -w -C INPUT -j {CHAIN} 2>/dev/null || iptables -w -I INPUT 1 -j {CHAIN}")


def drop_rules(sources: Sequence[str]) -> list[str]:
    return [f"-s {ip} -j DROP" for ip in sources]


def add_script(sources: Sequence[str]) -> str:
    adds = [f"iptables -w -A {CHAIN} {rule}" for rule in drop_rules(sources)]
    return " && ".join([f"{{ {setup_script()}; }}", *adds])


def remove_script(sources: Sequence[str]) -> str:
    # Each delete removes one copy of the rule; a missing rule is not an error
    # (heal of a fault that never took effect), so every delete runs.
    dels = [f"iptables -w -D {CHAIN} {rule} 2>/dev/null" for rule in drop_rules(sources)]
    return "; ".join(dels + ["true"])


def flush_script() -> str:
    return f"iptables -w -F {CHAIN} 2>/dev/null; true"


def list_rules_script() -> str:
    return f"iptables -w -S {CHAIN} 2>/dev/null | grep -- '-j DROP' || true"


# -- shapes (pure) ---------------------------------------------------------
def grudge_from_components(nodes: Sequence[Node], components: Sequence[Sequence[Node]]) -> Grudge:
    """Each node drops traffic from every node it shares no component with.
    Components may overlap (bridge, ring); a node in no component is not cut."""
    grudge: Grudge = {}
    for n in nodes:
        mine = [c for c in components if any(m.name == n.name for m in c)]
        if not mine:
            continue
        visible = {m.name for c in mine for m in c}
        grudge[n.name] = tuple(sorted(o.ip for o in nodes if o.name not in visible))
    return {k: v for k, v in grudge.items() if v}


def isolate_grudge(targets: Sequence[Node], nodes: Sequence[Node]) -> Grudge:
    target_names = {t.name for t in targets}
    rest = [n for n in nodes if n.name not in target_names]
    return grudge_from_components(nodes, [list(targets), rest])


def halves_grudge(minority: Sequence[Node], majority: Sequence[Node]) -> Grudge:
    return grudge_from_components([*minority, *majority], [minority, majority])


def bridge_grudge(ordered: Sequence[Node]) -> Grudge:
    """Two halves that cannot see each other, and one node (the first) that sees both."""
    if len(ordered) < 3:
        raise FaultError("a bridge partition needs at least 3 nodes")
    bridge, rest = ordered[0], list(ordered[1:])
    half = len(rest) // 2
    return grudge_from_components(ordered, [[bridge, *rest[:half]], [bridge, *rest[half:]]])


def ring_grudge(ordered: Sequence[Node]) -> Grudge:
    """Overlapping majorities: nodes on a ring, each sees the nodes within
    distance d, with 2d+1 the smallest odd number >= a majority, so every node
    sees a majority (itself included) and no two nodes see the same one. With
    fewer than 4 nodes every node would see all others; that case degrades to
    a bridge (the closest overlapping split 3 nodes allow)."""
    n = len(ordered)
    if n < 4:
        return bridge_grudge(ordered)
    majority = n // 2 + 1
    d = majority // 2            # 2d+1 >= majority
    grudge: Grudge = {}
    for i, node in enumerate(ordered):
        far = [ordered[j].ip for j in range(n) if min(abs(i - j), n - abs(i - j)) > d]
        if far:
            grudge[node.name] = tuple(sorted(far))
    return grudge


def cut_clients_grudge(targets: Sequence[Node], client_ips: Callable[[Node], Sequence[str]]) -> Grudge:
    return {t.name: tuple(sorted(client_ips(t))) for t in targets}


# -- the fault -------------------------------------------------------------
def default_gateway(node: Node) -> str:
    """Fallback when ctx.client_ips is unset: the node's default gateway (on a
    Docker bridge network, the host's address; faults.context asks Docker instead)."""
    out = sh(node, "ip -4 route show default")
    parts = out.split()
    if "via" not in parts:
        raise FaultError(f"{node.name}: no default route in `{out.strip()}`")
    return parts[parts.index("via") + 1]


def client_ips_for(ctx: FaultContext) -> Callable[[Node], Sequence[str]]:
    if ctx.client_ips:
        return lambda node: ctx.client_ips  # type: ignore[return-value]
    return lambda node: [default_gateway(node)]


@dataclass(frozen=True)
class Shape:
    """How to partition: a name for the event log and a grudge builder."""
    name: str
    build: Callable[[FaultContext], Grudge]


def isolate(selector: Selector, pool: Selector = all_nodes) -> Shape:
    return Shape("isolate", lambda ctx: isolate_grudge(selector(ctx), pool(ctx)))


def halves(pool: Selector = all_nodes) -> Shape:
    def build(ctx: FaultContext) -> Grudge:
        minority, majority = split(pool(ctx), ctx)
        return halves_grudge(minority, majority)
    return Shape("majority-minority", build)


def _shuffled(name: str, pool: Selector, grudge_of) -> Shape:
    """A shape over the pool in a seeded random order (the rng makes it repeatable)."""
    def build(ctx: FaultContext) -> Grudge:
        nodes = list(pool(ctx))
        ctx.rng.shuffle(nodes)
        return grudge_of(nodes)
    return Shape(name, build)


def ring(pool: Selector = all_nodes) -> Shape:
    return _shuffled("ring", pool, ring_grudge)


def bridge(pool: Selector = all_nodes) -> Shape:
    return _shuffled("bridge", pool, bridge_grudge)


def isolate_leader(topic: str, partition: int = 0, pool: Selector = all_nodes) -> Shape:
    """The partition leader loses every other node (its followers, the
    controllers, ZooKeeper) while clients still reach it: acks=1 writes are
    acknowledged by a leader that is about to be replaced."""
    return Shape("isolate-leader", lambda ctx: isolate_grudge(leader_of(topic, partition)(ctx),
                                                              pool(ctx)))


def cut_clients(selector: Selector = all_brokers) -> Shape:
    return Shape("cut-clients",
                 lambda ctx: cut_clients_grudge(selector(ctx), client_ips_for(ctx)))


class Partition(BaseFault):
    """Silently drop traffic according to a shape; heal deletes exactly those rules."""

    name = "partition"

    def __init__(self, shape: Shape):
        super().__init__()
        self.shape = shape
        self.grudge: Grudge = {}

    def _inject(self, ctx: FaultContext) -> None:
        self.grudge = self.shape.build(ctx)
        self.targets = [ctx.cluster.node(name) for name in self.grudge]
        self.detail = {"shape": self.shape.name,
                       "grudge": {k: list(v) for k, v in self.grudge.items()}}
        for name, sources in self.grudge.items():
            node = ctx.cluster.node(name)
            try:
                sh(node, add_script(sources))
            except Exception:
                # A node another fault has down (a rolling restart's broker) cannot take
                # rules, and would start with a fresh namespace anyway. The other side's
                # rules still cut it off, so the partition holds: say which, go on.
                if container_status(node) not in DOWN_STATES:
                    raise
                self.detail.setdefault("down_at_inject", []).append(name)

    def _heal(self, ctx: FaultContext) -> None:
        failures = []
        for name, sources in self.grudge.items():
            node = ctx.cluster.node(name)
            try:
                sh(node, remove_script(sources))
            except Exception as e:  # noqa: BLE001
                # A stopped container has a fresh namespace on start: nothing to remove.
                # A paused one keeps its rules (and is not "running"): that is a failure.
                if node.is_running() or container_status(node) == "paused":
                    failures.append(f"{name}: {e}")
        if failures:
            raise FaultError("could not remove partition rules: " + "; ".join(failures))


def partition_words(name: str, names: list[str], detail: dict[str, Any]) -> str:
    """The partition in words, from its shape and grudge (as `Partition` records them)."""
    shape = detail.get("shape")
    grudge: dict[str, list] = detail.get("grudge") or {}
    if shape in ("isolate", "isolate-leader"):
        # the isolated node drops traffic from every other node; the others from it alone
        cut = [n for n, srcs in grudge.items() if len(grudge) > 2 and len(srcs) >= len(grudge) - 1]
        return f"{nodes_in_words(sorted(cut or names))} cut off from every other node; " \
               "clients still reach it"
    if shape == "majority-minority":
        return f"the cluster split in two ({nodes_in_words(sorted(grudge))} each lose the other side)"
    if shape == "cut-clients":
        return f"clients cut off from {nodes_in_words(names)}; the nodes still reach each other"
    if shape in ("ring", "bridge"):
        return f"a {shape} partition over {nodes_in_words(sorted(grudge))} " \
               "(each node sees only some others)"
    return f"network partition ({shape}) over {nodes_in_words(names)}"


def rules_on(node: Node) -> list[str]:
    """The DROP rules in the harness chain of a node (for tests and the sweep)."""
    return [line for line in sh(node, list_rules_script(), check=False).splitlines() if line.strip()]


def flush_all(node: Node) -> None:
    sh(node, flush_script(), check=False)
