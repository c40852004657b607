"""The pipeline family's clients: per pipeline, its processor instances
(workloads/pipeline_processor.py on librdkafka, in a process of ours; or
workloads/java_pipeline.py on Kafka's Java clients, or workloads/java_streams.py on Kafka
Streams, in a container each), their churn,
and at a graceful stop the wait until the group has committed every input.

Instances are slots <name>i0, <name>i1 …; a restarted one is a new instance named
<slot>.<n> with the slot's transactional.id, so it fences the one it replaces.

Events (kind `client`, target the instance, detail `pipeline`): pipeline-config (the
topics and processing the checker reads), pipeline-instance-start, pipeline-churn-clock
(the churn's clock started: how long it waited for its first victim's first committed
output, churn_clock.py), pipeline-instance-kill
(written before the SIGKILL), pipeline-instance-close, pipeline-instance-restart,
pipeline-caught-up (the graceful stop's wait: how long, and what was left), and
workload-died for an instance that ended on its own.
"""
from __future__ import annotations

import time
from dataclasses import replace
from pathlib import Path

from confluent_kafka import Consumer, TopicPartition

from core.context import RunContext
from core.errors import HarnessError
from core.history import WORKLOAD_DIED
from families.pipelines.churn_clock import FirstOutputWatch
from families.pipelines.section import PipelineSpec, transactional_id_of
from workloads.connection import connection_only
from workloads.java_pipeline import JavaProcessor
from workloads.java_streams import StreamsProcessor
from workloads.pipeline_processor import ProcessorSettings, run_processor, settings_json
from workloads.process import WorkerProcess
from workloads.worker_set import Worker, WorkerSet

CAUGHT_UP_S = 1.0


def settings_of(p: PipelineSpec, slot: str, ctx: RunContext) -> ProcessorSettings:
    return ProcessorSettings(
        pipeline=p.name, group_id=p.group, input_topic=p.input_topic,
        output_topic=p.output_topic, processing=p.processing, keyed=p.state == "per_key_count",
        transactional_id=transactional_id_of(ctx.run_id, slot), records_per_txn=p.records_per_txn,
        commit_interval_ms=p.commit_interval_ms, transaction_timeout_ms=p.transaction_timeout_ms,
        session_timeout_ms=p.session_timeout_ms, output_size=p.output_size,
        restore_timeout_s=max(60.0, 3 * p.transaction_timeout_ms / 1000),
        client_config={**connection_only(ctx.client_config or {}), **p.client_config})


class Pipeline(WorkerSet):
    """One pipeline's instances (a WorkerProcess each, or a JavaProcessor: a
    StreamsProcessor is one): started, killed or closed, restarted."""

    def __init__(self, spec: PipelineSpec, ctx: RunContext, clients_version: str | None = None):
        super().__init__()
        self.spec, self.ctx, self.clients_version = spec, ctx, clients_version
        self.clock: FirstOutputWatch | None = None
        self.clock_said = False

    def _event(self, name: str, target: str, **detail) -> None:
        self.ctx.events.emit("client", name, target, pipeline=self.spec.name,
                             group_id=self.spec.group, **detail)

    def start(self) -> "Pipeline":
        s = self.spec
        self._event("pipeline-config", s.name, input_topic=s.input_topic,
                    output_topic=s.output_topic, processing=s.processing, state=s.state,
                    client=s.client, instances=s.instances,
                    # java, streams: None is the brokers' version (each instance's
                    # pipeline-start names its client's version and the transactions
                    # protocol it speaks)
                    clients_version=self.clients_version if s.client != "librdkafka" else None,
                    streams_protocol=s.streams_protocol if s.client == "streams" else None)
        for slot in s.instance_names:
            self.start_instance(slot, slot)
        if s.churn is not None:
            victim = s.instance_names[0]        # the churn's first turn
            self.clock = FirstOutputWatch(
                {"bootstrap.servers": self.ctx.bootstrap, "group.id": f"{s.group}-churn-clock",
                 **connection_only(self.ctx.client_config or {})}, s.output_topic, victim)
            self.start_churn(
                s.churn, s.instance_names, f"pipeline-churn-{s.name}",
                on_error=lambda slot, e: self._event("pipeline-churn-error", slot, error=e),
                ready=self._churn_ready)
        return self

    def _churn_ready(self) -> bool:
        """The churn's clock (families/pipelines/churn_clock.py), said once it starts."""
        if not self.clock():
            return False
        if not self.clock_said:
            self.clock_said = True
            self._event("pipeline-churn-clock", self.clock.victim, started=True, **self.clock.done)
        return True

    def start_instance(self, slot: str, instance: str) -> None:
        logs = Path(self.ctx.dir) / "workloads"
        logs.mkdir(parents=True, exist_ok=True)
        settings = settings_of(self.spec, slot, self.ctx)
        if self.spec.client in ("java", "streams"):
            # the Java client's own settings: a secured cluster's come with its container
            settings = replace(settings, client_config=dict(self.spec.client_config))
            handle = JavaProcessor(settings, instance, self.ctx, self.clients_version) \
                if self.spec.client == "java" else StreamsProcessor(
                    settings, instance, self.ctx, self.clients_version,
                    protocol=self.spec.streams_protocol)
            self.workers[instance] = handle.start()
        else:
            self.workers[instance] = WorkerProcess(
                f"pipeline-{instance}", run_processor, settings_json(settings),
                instance, self.ctx.bootstrap, self.ctx.dir, self.ctx.run_id,
                log_path=logs / f"pipeline-{instance}.log").start()
        self.current[slot] = instance
        self._event("pipeline-instance-start", instance, slot=slot)

    def close(self, instance: str) -> None:
        self._event("pipeline-instance-close", instance, clean=True)
        self.workers[instance].stop(30.0)

    def kill(self, instance: str) -> None:
        self._event("pipeline-instance-kill", instance, signal="SIGKILL")
        self.workers[instance].kill()

    def restarted(self, instance: str, previous: str, slot: str) -> None:
        self._event("pipeline-instance-restart", instance, previous=previous, slot=slot)

    def catch_up(self) -> None:
        """Until the group's committed offsets have stood at every input partition's end
        for a second (the inputs are all processed and committed: a processor keeping up
        can be at the end for a moment while its producer still writes), or
        catch_up_timeout_s."""
        started = time.monotonic()
        reader = Consumer({"bootstrap.servers": self.ctx.bootstrap, "group.id": self.spec.group,
                           "enable.auto.commit": False, "isolation.level": "read_committed",
                           **connection_only(self.ctx.client_config or {})})
        left: dict[int, int] = {}
        at_end_since = None
        try:
            parts = sorted(reader.list_topics(self.spec.input_topic, timeout=30)
                           .topics[self.spec.input_topic].partitions)
            while time.monotonic() - started < self.spec.catch_up_timeout_s:
                left = _lag(reader, self.spec.input_topic, parts)
                if not any(w.is_alive() for w in self.workers.values()):
                    break
                if any(left.values()):
                    at_end_since = None
                elif at_end_since is None:
                    at_end_since = time.monotonic()
                elif time.monotonic() - at_end_since >= CAUGHT_UP_S:
                    break
                time.sleep(0.25)
        except Exception as e:  # noqa: BLE001 - the stop goes on; the checker judges
            left = {-1: -1}
            self._event("pipeline-catch-up-error", self.spec.name, error=f"{type(e).__name__}: {e}")
        finally:
            reader.close()
        self._event("pipeline-caught-up", self.spec.name, seconds=round(time.monotonic() - started, 1),
                    lag={str(p): n for p, n in left.items() if n})

    def before_stop(self, graceful: bool) -> None:
        if self.clock is not None and not (self.churn and self.churn.thread
                                           and self.churn.thread.is_alive()):
            if not self.clock_said:     # the load ended before the churn's clock started
                self.clock_said = True
                self._event("pipeline-churn-clock", self.clock.victim, started=False,
                            **self.clock.seen())
            self.clock.close()          # the churn's thread no longer reads with it
        if graceful:
            self.catch_up()

    def closing(self, instance: str, graceful: bool) -> None:
        self._event("pipeline-instance-close", instance, clean=graceful, why="run-end")

    def ended(self, instance: str, worker: Worker) -> None:
        if worker.died:
            self._event(WORKLOAD_DIED, instance, workload="pipeline-processor",
                        exitcode=worker.exitcode, source="exit code")


def _lag(reader: Consumer, topic: str, parts: list[int]) -> dict[int, int]:
    """partition -> inputs not yet committed by the group (end offset - committed)."""
    committed = reader.committed([TopicPartition(topic, p) for p in parts], timeout=10)
    out = {}
    for tp in committed:
        _, high = reader.get_watermark_offsets(TopicPartition(topic, tp.partition), timeout=10,
                                               cached=False)
        out[tp.partition] = max(0, high - max(tp.offset, 0))
    return out


class PipelineWorkloads:
    """Every pipeline of the scenario: entered by the runner's workloads-start."""

    def __init__(self, ctx: RunContext, workload):
        self.ctx, self.spec = ctx, workload
        self.pipelines: list[Pipeline] = []
        self.started_at: float | None = None
        self.stopped = False

    def __enter__(self) -> "PipelineWorkloads":
        self.started_at = time.monotonic()
        for p in self.spec.pipelines:
            self.pipelines.append(Pipeline(p, self.ctx, self.spec.clients_version).start())
        return self

    def fault_transactional_ids(self) -> tuple[dict[str, str], dict[str, tuple[str, int]]]:
        """What `txn_coordinator_of: {producer: <slot>}` asks FindCoordinator about: an
        exactly-once pipeline's instance slots are transactional producers too.
        librdkafka's and Java's processors use transactional_id_of (slot -> id); Kafka
        Streams chooses its own, <application.id (the pipeline's group)>-<processId>-
        <thread>, found at injection among the ids the brokers list (slot -> (prefix,
        the slot's index))."""
        ids, prefixes = {}, {}
        for p in self.spec.pipelines:
            if p.processing != "exactly_once":
                continue
            for i, slot in enumerate(p.instance_names):
                if p.client == "streams":
                    prefixes[slot] = (f"{p.group}-", i)
                else:
                    ids[slot] = transactional_id_of(self.ctx.run_id, slot)
        return ids, prefixes

    def check(self) -> None:
        for p in self.pipelines:
            if p.died():
                raise HarnessError(f"pipeline {p.spec.name}: instance(s) {', '.join(p.died())} "
                                   "died (their logs: run dir workloads/)")

    def __exit__(self, *exc) -> None:
        self.stop(graceful=False)

    def stop(self, graceful: bool) -> None:
        """Graceful: the inputs' producers end their duration first (they belong to the
        records family, stopped after this one), then each pipeline catches up."""
        if self.stopped:
            return
        if graceful and self.started_at is not None:
            time.sleep(self.ctx.load_left(self.started_at, self.spec.duration_s))
        for p in self.pipelines:
            p.stop(graceful)
        self.stopped = True
