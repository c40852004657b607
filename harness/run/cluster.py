"""The run's cluster: its images, the cluster itself, the metadata observer and the
topics; at the end, each node's log and the cluster's removal.

Each resource is removed where it is made: `cluster_up` pushes the cluster's stop and
its log collection on the run's finalizers before it starts anything (an interrupted
start still removes what was created), `observe` pushes the observer's stop. The
`logs` and `cluster-stop` phases run those finalizers on the normal path.
"""
from __future__ import annotations

import time
from pathlib import Path

from clusters.docker_cluster import DockerCluster
from clusters.external import ExternalCluster
from clusters.images import ensure_images
from clusters.observer import MetadataObserver
from core.errors import HarnessError, SpecError
from harness.run import Run
from harness.run.external import groups_of
from harness.scenario.yamlsource import format_path, load_yaml
from workloads.java_pipeline import prepared_processor
from workloads.java_share import prepared_share_member
from workloads.java_streams import StreamsJarsMissing, prepared_streams
from workloads.java_txn import prepared


def images(run: Run, detail: dict) -> None:
    s = run.scenario
    if s.cluster.external is not None:
        detail["images"] = {}
        return
    run.say("images: checking (a first build takes a few minutes)")
    detail["images"] = ensure_images(list(s.image_versions), toxiproxy=s.cluster.uses_toxiproxy)
    _prepare_java(run, detail)


def _prepare_java(run: Run, detail: dict) -> None:
    """Our Java programs (the transactional producer, the share member, the pipeline
    processors: Java's and Streams', whose jars come from Maven Central first) compiled
    and their class archives made now (cached after the first time), not once the load
    has begun (javac alone: ~6 s on 2 busy cores)."""
    w = run.scenario.workload
    wanted = [(name, prepare) for name, prepare, used in (
        ("java_txn_s", prepared, any(p.client == "java" for p in w.producers)),
        ("java_share_s", prepared_share_member, any(g.client == "java" for g in w.share_groups)),
        ("java_pipeline_s", prepared_processor, any(p.client == "java" for p in w.pipelines)),
        ("streams_pipeline_s", _streams_preparer(run.scenario),
         any(p.client == "streams" for p in w.pipelines)))
        if used]
    if not wanted:
        return
    tags = ensure_images([w.clients_version or run.scenario.cluster.version])
    [image] = [tag for what, tag in tags.items() if what.startswith("kafka-")]
    for name, prepare in wanted:
        started = time.monotonic()
        prepare(image, run.ctx.run_id)
        detail[name] = round(time.monotonic() - started, 3)


def _streams_preparer(scenario):
    """prepared_streams, its jars' fetch failing as bad input (exit 2): it names the
    first streams pipeline's `client` in the scenario file."""
    def prepare(image: str, run_id: str):
        try:
            return prepared_streams(image, run_id)
        except StreamsJarsMissing as e:
            i = next(i for i, p in enumerate(scenario.workload.pipelines) if p.client == "streams")
            raise SpecError(_where(scenario.source, ("workload", "pipelines", i, "client")),
                            str(e), f"run a Kafka version whose kafka-streams {e.version} Maven "
                            "Central serves (cluster.version or workload.clients_version), let "
                            "Maven reach Maven Central once (the jars are cached), or use client: "
                            "java") from None
    return prepare


def _where(source: str, path: tuple) -> str:
    """`file:line field` of a scenario value (its file read again), else `file field`."""
    try:
        _, src = load_yaml(Path(source).read_text(), source)
        return src.where(path)
    except (OSError, HarnessError):
        return f"{source} {format_path(path)}"


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
    s = run.scenario
    partitions = {t.name: t.partitions for t in s.topics}
    share_watch = [(g.group_id, t, p) for g in s.workload.share_groups for t in g.topics
                   for p in range(partitions.get(t, 1))]
    observer = MetadataObserver(run.ctx.cluster, run.ctx.events,
                                topics=[t.name for t in s.topics], share_watch=share_watch)
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
