"""Faults in one kind of Kafka exchange: delay a request or its response, drop the
response, cut the connection, or answer with an error, for the requests of one API
(Produce, Fetch, EndTxn …) to the target brokers, through the cluster's protocol proxy
(clusters/protocol_proxy.py; the cluster needs `protocol_proxy: true`).

Inject hands the proxy one rule under the fault's id; heal takes it back. Every request
the rule acts on becomes an `observe` event named `protocol-request` (API, version, correlation
id, client id, broker, action, the fault's id), so a checker row can name the exact
request a fault touched; heal notes how many it acted on (`matched`).
"""
from __future__ import annotations

from typing import Any

from clusters.kafka_requests import API_KEYS, ERROR_CODES
from clusters.protocol_proxy import (
    DELAY_REQUEST,
    DELAY_RESPONSE,
    DISCONNECT_AFTER,
    DISCONNECT_BEFORE,
    DROP_RESPONSE,
    ERROR,
    Rule,
)
from faults.base import BaseFault, FaultContext, FaultError, nodes_in_words
from faults.selectors import Selector

EVENT_NAME = "protocol-request"


def proxy_action(action: str, direction: str, when: str) -> str:
    """The proxy's action for a scenario's (action, direction, when)."""
    if action == "delay":
        return DELAY_REQUEST if direction == "request" else DELAY_RESPONSE
    if action == "disconnect":
        return DISCONNECT_BEFORE if when == "before" else DISCONNECT_AFTER
    return {"drop_response": DROP_RESPONSE, "error": ERROR}[action]


class ProtocolFault(BaseFault):
    name = "protocol"

    def __init__(self, target: Selector | None, apis: tuple[str, ...], action: str,
                 delay_ms: int = 0, error: str = "NOT_LEADER_OR_FOLLOWER",
                 probability: float | None = None, count: int | None = None,
                 client_id_prefix: str | None = None):
        super().__init__()
        self.target = target
        self.apis, self.action, self.delay_ms, self.error = tuple(apis), action, delay_ms, error
        self.probability, self.count, self.client_id_prefix = probability, count, client_id_prefix
        self.matched = 0

    def _inject(self, ctx: FaultContext) -> None:
        proxy = getattr(ctx.cluster, "protocol_proxy", None)
        if proxy is None:
            raise FaultError("this cluster has no protocol proxy (start it with "
                             "cluster.protocol_proxy: true)")
        self.targets = list(self.target(ctx) if self.target else ctx.cluster.brokers())
        names = {n.node_id: n.name for n in self.targets}
        rule = Rule(f"{self.fault_id}-rule", self.action,
                    api_keys=frozenset(API_KEYS[a] for a in self.apis),
                    brokers=frozenset(names), client_id_prefix=self.client_id_prefix,
                    probability=self.probability, count=self.count, delay_ms=self.delay_ms,
                    error_code=ERROR_CODES[self.error] if self.action == ERROR else 0)
        self.detail = {"apis": list(self.apis), "action": self.action,
                       "brokers": sorted(names), **self._options()}
        proxy.set_rules(self.fault_id, [rule], self._sink(ctx, names),
                        seed=ctx.rng.randrange(2 ** 32))

    def _options(self) -> dict[str, Any]:
        options = {"delay_ms": self.delay_ms if self.action in (DELAY_REQUEST, DELAY_RESPONSE)
                   else None, "error": self.error if self.action == ERROR else None,
                   "probability": self.probability, "count": self.count,
                   "client_id_prefix": self.client_id_prefix}
        return {k: v for k, v in options.items() if v is not None}

    def _sink(self, ctx: FaultContext, names: dict[int, str]):
        fault_id = self.fault_id

        def record(event: dict[str, Any]) -> None:
            self.matched += 1
            if ctx.events is not None:       # no flush per request: the writer flushes in time
                detail = {k: v for k, v in event.items() if k not in ("rule_set", "rule")}
                ctx.events.emit("observe", EVENT_NAME, names.get(event["broker"]),
                                fault_id=fault_id, **detail)
        return record

    def _heal(self, ctx: FaultContext) -> None:
        proxy = getattr(ctx.cluster, "protocol_proxy", None)
        if proxy is not None:
            proxy.clear_rules(self.fault_id)
        self.heal_notes["matched"] = self.matched


def protocol_words(name: str, names: list[str], detail: dict[str, Any]) -> str:
    apis = "/".join(detail.get("apis", [])) or "requests"
    action = detail.get("action", "act on").replace("_", " ")
    extra = ", ".join(f"{k} {detail[k]}" for k in ("delay_ms", "error", "probability", "count")
                      if k in detail)
    return f"{action} of {apis} on {nodes_in_words(names)}" + (f" ({extra})" if extra else "")
