"""The scenario's rules for a cluster the harness did not start, or one it secured:
what such a cluster cannot be asked (harness/scenario/build.py calls these with its
Builder: every refusal names the file, line and field).

An external cluster (`cluster.external`): only the fault kinds that allow it (`exec`;
the others act on the harness's own containers: each kind's `on_external` says so), no
nemesis (it draws container faults), and no Java clients (they run in a container on
our cluster's network). A secured cluster of ours (`cluster.security`): not the kinds
whose `on_secured` refuses it (those that run Kafka's tools inside a node over
PLAINTEXT: an upgrade's metadata step, a quorum change, the ZooKeeper migration).
"""
from __future__ import annotations

from dataclasses import replace
from typing import Any

from clusters.spec import ClusterSpec

LOCATED = ("bootstrap_servers", "client_config", "client_config_file", "topic_prefix", "nodes")


def locate(b: Any, spec: ClusterSpec) -> ClusterSpec:
    """An external spec that knows where its fields are written (for the checks a run
    makes before it starts, which name them as a parse error would)."""
    if spec.external is None:
        return spec
    where = {key: b.source.where(("cluster", "external", key)) for key in LOCATED}
    where[""] = b.source.where(("cluster", "external"))
    return replace(spec, external=spec.external.with_locations(where))


def check_fit(b: Any, cluster: ClusterSpec, workload: Any, faults: Any) -> None:
    if cluster.external is not None:
        _external_fit(b, workload, faults)
    if cluster.secured:
        _refused(b, faults, lambda kind: kind.on_secured)


def _refused(b: Any, faults: Any, refusal_of: Any) -> None:
    """The first timeline fault whose kind refuses this cluster (`refusal_of(kind)`), at its place."""
    for i, entry in enumerate(faults.timeline):
        refusal = refusal_of(entry.resolved.kind)
        if refusal is not None:
            b.fail(("faults", "timeline", i, "fault"), f"{entry.fault!r} {refusal.problem}", refusal.fix)


def _external_fit(b: Any, workload: Any, faults: Any) -> None:
    _refused(b, faults, lambda kind: kind.on_external)
    if faults.nemesis is not None:
        b.fail(("faults", "nemesis"), "the nemesis draws container faults; this cluster is external",
               "write a timeline of exec faults instead")
    for kind in ("java_producers", "java_consumers"):
        if getattr(workload, kind):
            b.fail(("workload", kind), "Kafka's Java clients run in a container on the harness's own "
                   "cluster network, not against an external cluster",
                   "use producers: and consumers: (librdkafka clients)")
    for i, p in enumerate(workload.pipelines):
        if p.client in ("java", "streams"):
            what = {"java": "Java", "streams": "Kafka Streams"}[p.client]
            b.fail(("workload", "pipelines", i, "client"), f"the {what} processor runs in a container "
                   "on the harness's own cluster network, not against an external cluster",
                   "use client: librdkafka")
