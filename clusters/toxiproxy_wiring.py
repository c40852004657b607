"""Routes broker listeners through one toxiproxy container.

This module only creates the proxies at cluster start (one per broker for
the client listener, and for replication when asked); adding toxics is the
faults layer's job. Proxy names: `broker-<id>-client`, `broker-<id>-internal`.
"""
from __future__ import annotations

import time

import requests

from clusters.config import (
    CLIENT_PORT,
    INTERNAL_PORT,
    TOXI_CLIENT_BASE,
    TOXI_INTERNAL_BASE,
    TOXIPROXY_API_PORT,
)
from clusters.spec import KRAFT_COMBINED, TOXIPROXY_ALL, ClusterSpec
from core.errors import HarnessError


def client_proxy_name(broker_id: int) -> str:
    return f"broker-{broker_id}-client"


def internal_proxy_name(broker_id: int) -> str:
    return f"broker-{broker_id}-internal"


class ToxiproxyWiring:
    def __init__(self, ip: str):
        self.ip = ip
        self.api_url = f"http://{ip}:{TOXIPROXY_API_PORT}"

    def wait_ready(self, timeout: float = 30) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                if requests.get(f"{self.api_url}/version", timeout=1).ok:
                    return
            except requests.RequestException:
                pass
            time.sleep(0.2)
        raise HarnessError(f"toxiproxy at {self.api_url} did not answer in {timeout:.0f} s")

    def create_proxy(self, name: str, listen_port: int, upstream: str) -> None:
        r = requests.post(f"{self.api_url}/proxies", timeout=5, json={
            "name": name, "listen": f"0.0.0.0:{listen_port}", "upstream": upstream,
            "enabled": True})
        if r.status_code not in (200, 201, 409):
            raise HarnessError(f"toxiproxy: creating proxy {name} failed: {r.status_code} {r.text}")

    def create_broker_proxies(self, spec: ClusterSpec,
                              client_upstreams: dict[int, str] | None = None) -> None:
        """`client_upstreams`: where each broker's client proxy forwards instead of the
        broker itself (the protocol proxy's listener for it)."""
        prefix = "kafka" if spec.mode == KRAFT_COMBINED else "broker"
        for bid in spec.broker_ids():
            upstream = (client_upstreams or {}).get(bid, f"{prefix}-{bid}:{CLIENT_PORT}")
            self.create_proxy(client_proxy_name(bid), TOXI_CLIENT_BASE + bid, upstream)
            if spec.toxiproxy == TOXIPROXY_ALL:
                self.create_proxy(internal_proxy_name(bid), TOXI_INTERNAL_BASE + bid,
                                  f"{prefix}-{bid}:{INTERNAL_PORT}")
