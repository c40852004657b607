"""What each phase of a run does (the order and the teardown live in harness/runner.py).

Every step is `step(state, detail)`: it acts on the run through `state`, puts
what a reader of phases.json should know into `detail`, and raises to end the
run. A step that starts something pushes the matching finalizer on
`state.teardown` first, so an interruption at any point stops it.
"""
from __future__ import annotations

import json
import os
import platform
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from harness.context import RunContext, Teardown
from harness.errors import HarnessError
from harness.history import WORKLOAD_DIED, now_us
from harness.phases import INTERRUPTED, PhaseLog, write_json

DELIVERY_SLACK_S = 30.0


@dataclass
class RunState:
    ctx: RunContext
    teardown: Teardown
    phases: PhaseLog
    options: Any
    producers: list = field(default_factory=list)
    groups: list = field(default_factory=list)
    java: list[threading.Thread] = field(default_factory=list)
    java_stop: threading.Event = field(default_factory=threading.Event)
    timeline: Any = None
    observer: Any = None
    heal_report: Any = None
    progress: Any = None
    load_started: float | None = None
    verify_result: Any = None
    stopped_in: str | None = None
    stop_reason: str | None = None

    @property
    def scenario(self):
        return self.ctx.scenario

    def say(self, message: str) -> None:
        if self.progress is not None:
            self.progress.say(message)
        else:
            print(message, flush=True)

    def start_progress(self) -> None:
        from harness.progress import make_progress
        self.progress = make_progress(self, self.options.progress)
        if self.progress is not None:
            self.progress.start()

    def close_progress(self) -> None:
        if self.progress is not None:
            self.progress.stop()

    def result(self):
        from harness.runner import RunResult, write_result
        v = self.verify_result
        if self.stopped_in is not None:
            reason = f"{'interrupted' if self.stop_reason == INTERRUPTED else 'failed'} " \
                     f"in phase {self.stopped_in}" + \
                     ("" if self.stop_reason == INTERRUPTED else f": {self.stop_reason}")
            result = RunResult(self.ctx.run_id, self.ctx.run_dir, 2, "unknown", reason,
                               interrupted=self.stop_reason == INTERRUPTED)
        elif v is None:
            result = RunResult(self.ctx.run_id, self.ctx.run_dir, 0, "not verified",
                               "verification skipped (--no-verify)")
        else:
            result = RunResult(self.ctx.run_id, self.ctx.run_dir, v.verdict.exit_code,
                               v.verdict.status, v.verdict.reason, v.summary)
        result.phases = self.phases.records
        write_result(self, result)
        return result


# -- the live phases --------------------------------------------------------------
def validate(state: RunState, detail: dict) -> None:
    from clusters.docker_env import docker_client
    if os.geteuid() != 0:
        raise HarnessError("harness run needs root: log dirs are tmpfs mounts (fix: run as root)")
    engine = docker_client().version()
    ctx, s = state.ctx, state.scenario
    (ctx.run_dir / "scenario.yaml").write_text(s.to_yaml())
    write_manifest(ctx, engine)
    detail.update(scenario=s.name, source=s.source, seed=s.seed, run_dir=str(ctx.run_dir))


def write_manifest(ctx: RunContext, engine: dict | None = None, **end: Any) -> None:
    from importlib.metadata import PackageNotFoundError, version
    path = ctx.run_dir / "manifest.json"
    doc = json.loads(path.read_text()) if path.exists() else {}
    if not doc:
        def pkg(name: str) -> str | None:
            try:
                return version(name)
            except PackageNotFoundError:
                return None
        doc = {"run_id": ctx.run_id, "scenario": ctx.scenario.name, "seed": ctx.seed,
               "kafka": ctx.scenario.cluster.kafka.version, "harness": pkg("kafka-harness"),
               "python": platform.python_version(), "spark": pkg("pyspark"),
               "confluent_kafka": pkg("confluent-kafka"),
               "docker": (engine or {}).get("Version"), "host": platform.node(),
               "cluster": ctx.scenario.cluster.to_dict(), "start_us": now_us(), "end_us": None}
    doc.update(end)
    write_json(path, doc)


def images(state: RunState, detail: dict) -> None:
    from clusters.images import ensure_images
    from clusters.spec import TOXIPROXY_OFF
    s = state.scenario
    versions = [s.cluster.version, *(str(e.params["to_version"]) for e in s.faults.timeline
                                     if e.fault == "rolling-upgrade" and "to_version" in e.params)]
    state.say("images: checking (a first build takes a few minutes)")
    detail["images"] = ensure_images(list(dict.fromkeys(versions)),
                                     toxiproxy=s.cluster.toxiproxy != TOXIPROXY_OFF)


def cluster_up(state: RunState, detail: dict) -> None:
    from clusters.docker_cluster import DockerCluster
    ctx = state.ctx
    cluster = DockerCluster(state.scenario.cluster, run_id=ctx.run_id)
    state.teardown.push("cluster-stop", cluster.stop)
    state.teardown.push("logs", lambda: cluster.collect_logs(ctx.run_dir / "logs"))
    cluster.start()
    ctx.cluster = cluster
    ctx.attach_faults()
    detail.update(bootstrap=ctx.bootstrap, nodes=[n.name for n in cluster.nodes()])


def observer(state: RunState, detail: dict) -> None:
    from clusters.observer import MetadataObserver
    obs = MetadataObserver(state.ctx.cluster, state.ctx.events,
                           topics=[t.name for t in state.scenario.topics])
    state.teardown.push("observer-stop", obs.stop)
    state.observer = obs.start()


def topics(state: RunState, detail: dict) -> None:
    for t in state.scenario.topics:
        state.ctx.cluster.create_topic(t.name, t.partitions, t.replication_factor, t.configs)
    detail["topics"] = [t.name for t in state.scenario.topics]


def workloads_start(state: RunState, detail: dict) -> None:
    from harness.run_steps_late import heal_everything, stop_workloads
    from workloads.consumer import ConsumerGroup
    from workloads.producer_churn import start_producer
    ctx, w = state.ctx, state.scenario.workload
    state.teardown.push("workloads-stop", lambda: stop_workloads(state))
    # Pushed after the workloads, so it runs before they stop: faults healed first.
    state.teardown.push("heal-all", lambda: heal_everything(state))
    ctx.events.emit("phase", "load-start")
    state.load_started = time.monotonic()
    for spec in w.consumers:
        state.groups.append(ConsumerGroup(spec, ctx).start())
    for spec in w.producers:
        state.producers.append(start_producer(spec, ctx))
    for spec in w.java_producers:
        _java_thread(state, f"java-producer-j{spec.prefix}", _java_producer, spec)
    for spec in w.java_consumers:
        _java_thread(state, f"java-consumer-{spec.name}", _java_consumer, spec)
    detail.update(producers=[p.spec.name for p in state.producers],
                  groups=[g.spec.group_id for g in state.groups], java=len(state.java))


def _java_thread(state: RunState, name: str, fn: Callable, spec) -> None:
    def body() -> None:
        try:
            fn(state, spec)
        except Exception as e:  # noqa: BLE001 - reported in the history, the run goes on
            state.ctx.events.emit("client", WORKLOAD_DIED, name, workload="java",
                                  error=str(e)[:500])
    t = threading.Thread(target=body, name=name, daemon=True)
    t.start()
    state.java.append(t)


def _java_producer(state: RunState, spec) -> None:
    from workloads.java_clients import run_java_producer
    run_java_producer(state.ctx, topic=spec.topic, max_messages=spec.max_messages,
                      prefix=spec.prefix, acks=spec.acks, throughput=spec.throughput,
                      config=spec.config, should_stop=state.java_stop.is_set,
                      timeout_s=state.scenario.workload.duration_s + 120)


def _java_consumer(state: RunState, spec) -> None:
    from workloads.java_clients import run_java_consumer
    run_java_consumer(state.ctx, topic=spec.topic, group_id=spec.group_id, name=spec.name,
                      isolation=spec.isolation, auto_commit=spec.auto_commit, config=spec.config,
                      should_stop=state.java_stop.is_set,
                      timeout_s=state.scenario.workload.duration_s + 600)


def warm_up(state: RunState, detail: dict) -> None:
    """Until every partition written to has its first ack: faults before then would
    hit a workload that has not started, and tell nothing."""
    import pyarrow.compute as pc

    from harness.history_tail import HistoryTail
    s = state.scenario
    written = {p.topic for p in s.workload.producers} | {j.topic for j in s.workload.java_producers}
    want = {(t.name, i) for t in s.topics if t.name in written for i in range(t.partitions)}
    tail = HistoryTail(state.ctx.run_dir, "produced", ["topic", "partition", "status"])
    acked: set = set()
    deadline = time.monotonic() + s.workload.warmup_timeout_s
    while not want <= acked:
        for batch in tail.poll():
            rows = batch.filter(pc.equal(batch["status"], "acked"))
            acked |= set(zip(rows["topic"].to_pylist(), rows["partition"].to_pylist(), strict=True))
        _check_workers(state)
        if time.monotonic() > deadline:
            raise HarnessError(f"no ack on {sorted(want - acked)[:5]} after "
                               f"{s.workload.warmup_timeout_s:g} s: the cluster takes no writes")
        time.sleep(0.25)
    detail["partitions"] = len(want)


def _check_workers(state: RunState) -> None:
    for p in state.producers:
        if p.exitcode not in (None, 0):
            raise HarnessError(f"producer {p.spec.name} exited with {p.exitcode} "
                               f"(its events are in the run's history)")


STEPS_LIVE: dict[str, Callable[[RunState, dict], None]] = {
    "validate": validate, "images": images, "cluster-up": cluster_up, "observer": observer,
    "topics": topics, "workloads-start": workloads_start, "warm-up": warm_up,
}

