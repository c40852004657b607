"""Faults on the link between a mirrored run's clusters: MirrorMaker 2's own traffic
to one cluster, nothing else's (the producers, consumers and brokers are untouched).

- `link-partition`: MM2 cannot reach the source's brokers (`side: source`) or the
  target's (`side: target`). iptables DROP rules in MM2's container's network namespace,
  both ways (INPUT from, OUTPUT to every address MM2 reaches that cluster at: its brokers,
  the addresses it advertises, a proxy in between), in the HARNESS chain jumped to from
  INPUT and OUTPUT; heal deletes exactly those rules. Silent drops, as
  faults/network.py's partitions: MM2's requests time out, no RST. A restarted MM2
  container has a fresh namespace: a heal after an `mm2-kill` finds nothing to remove.
- `link-latency`: MM2's traffic to the source delayed. MM2 reaches the source only
  through a toxiproxy of its own (workload.mirror.link_proxy: the family DNATs MM2's
  connections to the source's brokers to it); the fault adds a latency toxic to each of
  that proxy's proxies, both streams, so a request and its response are each delayed
  by `latency_ms` (± jitter). Removed on heal.

The fault reaches MM2 through the fault context's `mirror-maker` process (the family's
families/mirror/mm2.MirrorMaker): `exec(script)`, `status()`, `name`, and for the
latency its link proxy (`link_toxiproxy`, `link_proxy_names()`, `link_addresses(side)`).
"""
from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Any

from faults.base import BaseFault, FaultContext, FaultError
from faults.sidecar import MIRROR_MAKER
from faults.toxics import LinkToxic, latency

CHAIN = "HARNESS"
SOURCE, TARGET = "source", "target"


# -- iptables command text (pure) ------------------------------------------
def setup_script() -> str:
    """The chain and its jumps from INPUT and OUTPUT, each only if missing."""
    jumps = "; ".join(f"{{ iptables -w -C {c} -j {CHAIN} 2>/dev/null || "
                      f"iptables -w -I {c} 1 -j {CHAIN}; }}" for c in ("INPUT", "OUTPUT"))
    return f"iptables -w -N {CHAIN} 2>/dev/null; {jumps}"


def drop_rules(addresses: Sequence[str]) -> list[str]:
    """Both ways: what comes from an address (INPUT) and what goes to it (OUTPUT)."""
    return [rule for ip in addresses for rule in (f"-s {ip} -j DROP", f"-d {ip} -j DROP")]


def add_script(addresses: Sequence[str]) -> str:
    adds = [f"iptables -w -A {CHAIN} {rule}" for rule in drop_rules(addresses)]
    return " && ".join([f"{{ {setup_script()}; }}", *adds])


def remove_script(addresses: Sequence[str]) -> str:
    # a missing rule (a restarted container's fresh namespace) is not an error
    dels = [f"iptables -w -D {CHAIN} {rule} 2>/dev/null" for rule in drop_rules(addresses)]
    return "; ".join([*dels, "true"])


def hosts_of(bootstrap: str) -> list[str]:
    """The hosts of a bootstrap list `h1:p1,h2:p2`."""
    return [e.strip().rsplit(":", 1)[0] for e in bootstrap.split(",") if e.strip()]


# -- the faults ------------------------------------------------------------
def mirror_maker(ctx: FaultContext) -> Any:
    p = ctx.processes.get(MIRROR_MAKER)
    if p is None:
        raise RuntimeError("this run has no MirrorMaker 2 (workload.mirror) whose link to cut")
    return p


def link_addresses(ctx: FaultContext, side: str, mm2: Any) -> list[str]:
    """Every address MM2 reaches `side`'s cluster at, now: its brokers' own, the ones it
    advertises (a toxiproxy's), and MM2's link proxy's for the source."""
    cluster = ctx.cluster if side == SOURCE else ctx.on(TARGET).cluster
    ips = {n.ip for n in cluster.brokers() if getattr(n, "ip", None)}
    ips.update(hosts_of(cluster.bootstrap_servers()))
    ips.update(getattr(mm2, "link_addresses", lambda s: [])(side))
    return sorted(ips)


class LinkPartition(BaseFault):
    name = "link-partition"

    def __init__(self, side: str = SOURCE):
        super().__init__()
        self.side = side
        self.addresses: list[str] = []

    def _exec(self, mm2: Any, script: str) -> None:
        if mm2.status() == "paused":
            # seen in CI: a link cut at the second an mm2-pause healed (docker: 409, "is paused")
            raise FaultError(f"{mm2.name} is paused (an mm2-pause holds it): its rules cannot be "
                             "changed until it is unpaused; schedule the link fault outside the pause")
        code, out = mm2.exec(script)
        if code != 0:
            raise FaultError(f"{mm2.name}: `{script[:200]}` exited {code}: {out.strip()[-300:]}")

    def _inject(self, ctx: FaultContext) -> None:
        mm2 = mirror_maker(ctx)
        self.addresses = link_addresses(ctx, self.side, mm2)
        self.detail.update(side=self.side, container=mm2.name, addresses=self.addresses)
        if not self.addresses:
            raise FaultError(f"no address of the {self.side} cluster to cut MM2 off from")
        self._exec(mm2, add_script(self.addresses))

    def _heal(self, ctx: FaultContext) -> None:
        mm2 = mirror_maker(ctx)
        if mm2.status() in ("exited", "dead", "removed", "absent"):
            return               # a container started again has a fresh namespace
        self._exec(mm2, remove_script(self.addresses))


class LinkLatency(LinkToxic):
    """A latency toxic on MM2's own link proxy to the source (both streams)."""

    def __init__(self, latency_ms: int, jitter_ms: int = 0):
        super().__init__(latency(latency_ms, jitter_ms), proxies=self._link_proxies)
        self.name = "link-latency"

    @staticmethod
    def _link_proxies(ctx: FaultContext) -> list[str]:
        names = mirror_maker(ctx).link_proxy_names()
        if not names:
            raise FaultError("MirrorMaker 2 has no link proxy (set workload.mirror.link_proxy: true)")
        return names

    def _link_ctx(self, ctx: FaultContext) -> FaultContext:
        return dataclasses.replace(ctx, toxiproxy=mirror_maker(ctx).link_toxiproxy)

    def _inject(self, ctx: FaultContext) -> None:
        super()._inject(self._link_ctx(ctx))
        self.detail.update(side=SOURCE, container=mirror_maker(ctx).name)

    def _heal(self, ctx: FaultContext) -> None:
        super()._heal(self._link_ctx(ctx))


def link_words(name: str, targets: list[str], detail: dict[str, Any]) -> str:
    side = detail.get("side", SOURCE)
    if name == "link-latency":
        a = detail.get("attributes") or {}
        jitter = f" ± {a['jitter']} ms" if a.get("jitter") else ""
        return (f"MirrorMaker 2's traffic to the {side} cluster delayed {a.get('latency', '?')} ms"
                f"{jitter} each way (a latency toxic on its own link proxy; producers and "
                "consumers not delayed); healed: the toxic removed")
    return (f"the link from MirrorMaker 2 to the {side} cluster cut (iptables DROP, both ways, "
            f"in MM2's network namespace, of {', '.join(detail.get('addresses') or []) or '?'}); "
            "healed: the rules removed")
