"""Build a FaultContext for a real cluster: where its clients come from,
its toxiproxy server, its log dir."""
from __future__ import annotations

import random

from clusters.config import LOG_DIR
from clusters.docker_env import docker_client
from core.history import EventLog
from faults.base import FaultContext
from faults.toxiproxy_adapter import ToxiproxyAdapter

TOXIPROXY_API_PORT = 8474


def network_gateway(network_name: str) -> str | None:
    """The host's address on a Docker network: the source of the harness's
    client connections to containers on it (internal networks have no
    default route inside the containers, so ask Docker)."""
    try:
        net = docker_client().networks.get(network_name)
        for cfg in net.attrs.get("IPAM", {}).get("Config") or []:
            if cfg.get("Gateway"):
                return cfg["Gateway"]
    except Exception:  # noqa: BLE001 - no Docker / unknown network: fall back to routes
        return None
    return None


def context_for(cluster, events: EventLog | None = None, seed: int = 0,
                **overrides) -> FaultContext:
    """A FaultContext filled in from what the cluster offers (optional attributes:
    `network_name`, `toxiproxy.ip`, `spec.log_dir`)."""
    kw: dict = {"cluster": cluster, "events": events, "rng": random.Random(seed)}
    network = getattr(cluster, "network_name", None)
    gateway = network_gateway(network) if network else None
    clients = [gateway] if gateway else []
    wiring = getattr(cluster, "toxiproxy", None)
    if wiring is not None and getattr(wiring, "ip", None):
        kw["toxiproxy"] = ToxiproxyAdapter(wiring.ip, TOXIPROXY_API_PORT)
        # Client connections routed through toxiproxy arrive from its address
        # (with replication routed through it too, cutting clients cuts that as well).
        clients.append(wiring.ip)
    if clients:
        kw["client_ips"] = tuple(clients)
    try:
        kw["log_dir"] = LOG_DIR
    except ImportError:
        pass
    kw.update(overrides)
    return FaultContext(**kw)
