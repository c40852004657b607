"""What a fault can need from the cluster, each need one object that says whether a
cluster meets it and, if not, why (in words a scenario's author can act on).

    TOXIPROXY.why_not(spec)   # None, or "needs toxiproxy wiring; set cluster.toxiproxy: …"

A fault kind lists its needs (faults/catalog.py); the scenario builder asks each need
of the scenario's cluster before anything starts and reports the answer at the fault's
place in the file.
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from clusters.spec import KRAFT_ISOLATED, TOXIPROXY_ALL, TOXIPROXY_OFF, ZOOKEEPER, ClusterSpec


@dataclass(frozen=True, order=True)
class Need:
    """A need by name (needs sort and compare by it), and why a cluster lacks it."""
    name: str
    # Why `cluster` cannot give it (None: it can). Written after the fault's name:
    # "'toxic' needs toxiproxy wiring; …".
    lacking: Callable[[ClusterSpec], str | None] = field(compare=False, repr=False)

    def why_not(self, cluster: ClusterSpec) -> str | None:
        return self.lacking(cluster)


ZOOKEEPER_MODE = Need("zookeeper", lambda c: None if c.mode == ZOOKEEPER else
                      f"needs a ZooKeeper-mode cluster; this one is {c.mode}")
KRAFT = Need("kraft", lambda c: None if c.is_kraft else
             "needs a KRaft cluster; this one runs in ZooKeeper mode")
TOXIPROXY = Need("toxiproxy", lambda c: None if c.toxiproxy != TOXIPROXY_OFF else
                 "needs toxiproxy wiring; set cluster.toxiproxy: client (or client+replication)")
TOXIPROXY_REPLICATION = Need(
    "toxiproxy-replication", lambda c: None if c.toxiproxy == TOXIPROXY_ALL else
    "acts on the replication listener; set cluster.toxiproxy: client+replication")
PROTOCOL_PROXY = Need("protocol-proxy", lambda c: None if c.protocol_proxy else
                      "needs the protocol proxy on the client links; set cluster.toxiproxy: "
                      "client and cluster.protocol_proxy: true")
# Nodes re-created on another image: every cluster the harness starts can (an
# external one is refused as a whole, by the kind's `on_external`).
REPLACEABLE = Need("replaceable", lambda c: None)
DYNAMIC_QUORUM = Need(
    "dynamic-quorum", lambda c: None if c.dynamic_quorum and c.mode == KRAFT_ISOLATED else
    "needs a dynamic KRaft quorum of isolated controllers; set cluster.mode: "
    "kraft-isolated and cluster.dynamic_quorum: true (Kafka 3.9+)")

NEEDS = frozenset({ZOOKEEPER_MODE, KRAFT, TOXIPROXY, TOXIPROXY_REPLICATION, REPLACEABLE,
                   DYNAMIC_QUORUM, PROTOCOL_PROXY})
