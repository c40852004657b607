"""The run's cluster: its images, the cluster itself, the metadata observer and the
topics; at the end, each node's log and the cluster's removal.

Each resource is removed where it is made: `cluster_up` pushes the cluster's stop and
its log collection on the run's finalizers before it starts anything (an interrupted
start still removes what was created), `observe` pushes the observer's stop. The
`logs` and `cluster-stop` phases run those finalizers on the normal path.
"""
from __future__ import annotations

import time

from clusters.docker_cluster import DockerCluster
from clusters.external import ExternalCluster
from clusters.images import ensure_images
from clusters.observer import MetadataObserver
from harness.run import Run
from harness.run.external import groups_of
from workloads.java_txn import prepared


def images(run: Run, detail: dict) -> None:
    s = run.scenario
    if s.cluster.external is not None:
        detail["images"] = {}
        return
    run.say("images: checking (a first build takes a few minutes)")
    detail["images"] = ensure_images(list(s.image_versions), toxiproxy=s.cluster.uses_toxiproxy)
    _prepare_java_txn(run, detail)


def _prepare_java_txn(run: Run, detail: dict) -> None:
    """The Java transactional producer compiled and its class archive made now (cached
    after the first time), not once the load has begun (javac alone: ~6 s on 2 busy
    cores)."""
    w = run.scenario.workload
    if not any(p.client == "java" for p in w.producers):
        return
    started = time.monotonic()
    tags = ensure_images([w.clients_version or run.scenario.cluster.version])
    [image] = [tag for what, tag in tags.items() if what.startswith("kafka-")]
    prepared(image, run.ctx.run_id)
    detail["java_txn_s"] = round(time.monotonic() - started, 3)


def cluster_up(run: Run, detail: dict) -> None:
    """Our DockerCluster; or an external one, whose stop deletes what the run made there."""
    ctx, spec = run.ctx, run.scenario.cluster
    cluster = DockerCluster(spec, run_id=ctx.run_id) if spec.external is None \
        else ExternalCluster(spec, run_id=ctx.run_id)
    ctx.finalizers.push("cluster-stop", cluster.stop)
    ctx.finalizers.push("logs", lambda: cluster.collect_logs(ctx.run_dir / "logs"))
    cluster.start()
    ctx.cluster = cluster
    ctx.client_config = cluster.client_config()
    if spec.external is not None:
        for group in groups_of(run.scenario):
            cluster.claim_group(group)
        detail["topic_prefix"] = cluster.prefix
    detail.update(bootstrap=ctx.bootstrap, nodes=[n.name for n in cluster.nodes()],
                  security=ctx.client_config.get("security.protocol", "PLAINTEXT"))


def observe(run: Run, detail: dict) -> None:
    observer = MetadataObserver(run.ctx.cluster, run.ctx.events,
                                topics=[t.name for t in run.scenario.topics])
    run.observer = run.ctx.finalizers.enter("observer-stop", observer)


def topics(run: Run, detail: dict) -> None:
    for t in run.scenario.topics:
        run.ctx.cluster.create_topic(t.name, t.partitions, t.replication_factor, t.configs)
    detail["topics"] = [t.name for t in run.scenario.topics]


def logs(run: Run, detail: dict) -> None:
    run.ctx.finalizers.run("observer-stop")
    files = run.ctx.finalizers.run("logs") or []
    detail["files"] = len(files)


def cluster_stop(run: Run, detail: dict) -> None:
    run.ctx.finalizers.run("cluster-stop")
    left = getattr(run.ctx.cluster, "left_behind", None)     # an external cluster's
    if left:        # the run goes on; the report's "what else went wrong" names them too
        detail["left_on_cluster"] = left
        run.say("warning: left on the external cluster (remove them, or grant Delete): "
                + ", ".join(f"{what} ({why})" for what, why in sorted(left.items())))
