"""Degraded links through toxiproxy: latency with jitter, bandwidth limits,
timeouts, reset_peer, slow_close, slicer, on one broker's links or all.

The cluster advertises each broker's client listener (and, when asked, its
replication listener) through a toxiproxy proxy; `ctx.toxiproxy` is a
`ToxiproxyAdapter` for that server. A `LinkToxic` adds one toxic per proxy
and stream on inject and removes exactly those on heal.
"""
from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from faults.base import BaseFault, FaultContext, FaultError, nodes_in_words
from faults.selectors import Selector

ProxyPicker = Callable[[FaultContext], list[str]]

CLIENT = "client"
REPLICATION = "internal"      # the inter-broker listener


def proxy_name(node, listener: str) -> str:
    """Naming contract with clusters/toxiproxy_wiring.py: `broker-<id>-client`,
    `broker-<id>-internal`."""
    return f"broker-{node.node_id}-{listener}"


def proxies_of(selector: Selector | None = None,
               listeners: Sequence[str] = (CLIENT,)) -> ProxyPicker:
    """Proxy names of the selected brokers' listeners (all brokers when no selector)."""
    def pick(ctx: FaultContext) -> list[str]:
        if ctx.toxiproxy is None:
            raise FaultError("this cluster has no toxiproxy (start it with_toxiproxy())")
        nodes = selector(ctx) if selector else ctx.cluster.brokers()
        names = [proxy_name(n, lst) for n in nodes for lst in listeners]
        existing = set(ctx.toxiproxy.proxies())
        missing = [n for n in names if n not in existing]
        if missing:
            raise FaultError(f"no toxiproxy proxies {missing}; the server has {sorted(existing)} "
                             f"(is the {'/'.join(listeners)} listener routed through toxiproxy?)")
        return names
    pick.__name__ = f"proxies_of({getattr(selector, '__name__', 'all brokers')}, {list(listeners)})"
    return pick


# Toxic kinds with their attribute names, as toxiproxy defines them.
def latency(ms: int, jitter_ms: int = 0) -> tuple[str, dict[str, Any]]:
    return "latency", {"latency": ms, "jitter": jitter_ms}


def bandwidth(kb_per_s: int) -> tuple[str, dict[str, Any]]:
    return "bandwidth", {"rate": kb_per_s}


def timeout(ms: int = 0) -> tuple[str, dict[str, Any]]:
    """Stop all data; close the connection after `ms` (0: keep it open until healed)."""
    return "timeout", {"timeout": ms}


def reset_peer(ms: int = 0) -> tuple[str, dict[str, Any]]:
    return "reset_peer", {"timeout": ms}


def slow_close(delay_ms: int) -> tuple[str, dict[str, Any]]:
    return "slow_close", {"delay": delay_ms}


def slicer(average_size: int = 64, size_variation: int = 32,
           delay_us: int = 1000) -> tuple[str, dict[str, Any]]:
    return "slicer", {"average_size": average_size, "size_variation": size_variation,
                      "delay": delay_us}


class LinkToxic(BaseFault):
    def __init__(self, toxic: tuple[str, dict[str, Any]], proxies: ProxyPicker | None = None,
                 streams: Sequence[str] = ("downstream", "upstream"), toxicity: float = 1.0):
        super().__init__()
        self.type, self.attributes = toxic
        self.name = f"toxic-{self.type}"
        self.proxies = proxies or proxies_of()
        self.streams, self.toxicity = tuple(streams), toxicity
        self.added: list[tuple[str, str]] = []     # (proxy, toxic name)

    def _toxic_name(self, stream: str) -> str:
        return f"harness-{self.fault_id}-{stream}"

    def _inject(self, ctx: FaultContext) -> None:
        names = self.proxies(ctx)
        self.detail = {"toxic": self.type, "attributes": self.attributes,
                       "streams": list(self.streams), "proxies": names,
                       "toxicity": self.toxicity}
        for proxy in names:
            for stream in self.streams:
                toxic_name = self._toxic_name(stream)
                self.added.append((proxy, toxic_name))    # before the call: heal removes it anyway
                ctx.toxiproxy.set_toxic(proxy, toxic_name, self.type, self.attributes,
                                        stream=stream, toxicity=self.toxicity)

    def _heal(self, ctx: FaultContext) -> None:
        for proxy, toxic_name in self.added:
            ctx.toxiproxy.remove_toxic(proxy, toxic_name)


def toxic_words(name: str, names: list[str], detail: dict[str, Any]) -> str:
    return f"{detail.get('toxic', name[6:])} on the links of {nodes_in_words(names)} " \
           f"({detail.get('attributes', {})})"
