"""MirrorMaker 2's own link proxy to the source (workload.mirror.link_proxy): a toxiproxy
container on the source's network with one proxy per address the source's brokers
advertise (`link-<i>`, listening on LINK_BASE + i, forwarding to that address). MM2's
container DNATs its connections to each advertised address to its proxy (iptables nat
OUTPUT in its own network namespace, set by its entrypoint before the JVM starts, so a
restarted MM2 goes through it again), so every byte MM2 exchanges with the source, and
no one else's, crosses the proxy: what faults/link.py's `link-latency` delays.

The container carries the run id's labels (role mirror-link): the source's stop and
`harness gc` remove it if the family's own removal never ran.
"""
from __future__ import annotations

from dataclasses import dataclass

from clusters.config import TOXIPROXY_API_PORT
from clusters.docker_env import docker_client, remove_container
from clusters.images import ensure_images
from clusters.labels import run_labels
from clusters.toxiproxy_wiring import ToxiproxyWiring
from faults.toxiproxy_adapter import ToxiproxyAdapter

LINK_BASE = 39000


@dataclass(frozen=True)
class Route:
    """MM2's connections to `host:port` go to the link proxy's `via_port`."""
    name: str
    host: str
    port: int
    via_port: int


def routes(bootstrap: str) -> list[Route]:
    """One route per advertised address of the source (`h1:p1,h2:p2`)."""
    out = []
    for i, entry in enumerate(e.strip() for e in bootstrap.split(",") if e.strip()):
        host, port = entry.rsplit(":", 1)
        out.append(Route(f"link-{i}", host, int(port), LINK_BASE + i))
    return out


def dnat_script(link_ip: str, rs: list[Route]) -> str:
    """iptables nat rules sending MM2's connections through the proxy; `&&`: any failure
    stops the entrypoint (MM2 must not run around its link)."""
    return " && ".join(f"iptables -w -t nat -A OUTPUT -p tcp -d {r.host} --dport {r.port} "
                       f"-j DNAT --to-destination {link_ip}:{r.via_port}" for r in rs)


class LinkProxy:
    def __init__(self, run_id: str, version: str):
        self.run_id, self.version = run_id, version
        self.container = None
        self.ip: str | None = None
        self.routes: list[Route] = []

    def start(self, network: str, bootstrap: str) -> "LinkProxy":
        image = ensure_images([self.version], toxiproxy=True)["toxiproxy"]
        self.container = docker_client().containers.run(
            image, detach=True, name=f"kh-{self.run_id}-mm2-link", network=network,
            labels=run_labels(self.run_id, role="mirror-link"), mem_limit="128m")
        self.container.reload()
        self.ip = self.container.attrs["NetworkSettings"]["Networks"][network]["IPAddress"]
        wiring = ToxiproxyWiring(self.ip)
        wiring.wait_ready()
        self.routes = routes(bootstrap)
        for r in self.routes:
            wiring.create_proxy(r.name, r.via_port, f"{r.host}:{r.port}")
        return self

    @property
    def adapter(self) -> ToxiproxyAdapter:
        return ToxiproxyAdapter(self.ip, TOXIPROXY_API_PORT)

    def dnat(self) -> str:
        return dnat_script(self.ip, self.routes)

    def remove(self) -> None:
        remove_container(self.container, "MM2's link proxy")
