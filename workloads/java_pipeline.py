"""The Java pipeline processor (`client: java`): Kafka's own KafkaConsumer and
KafkaProducer, the second processor of the pipeline family beside librdkafka's
(workloads/pipeline_processor.py), writing outputs of the same form, so the drain and
the checker read both alike.

`java/PipelineProcessor.java` is compiled against the kafka-clients jar of the image it
runs in, with a class archive, cached (java_build.prepared; `prepared_processor`, for
the run's images phase), and each instance runs in a one-off container of that image on
the cluster's network (java_clients._run_tool: labelled with the run id, always
removed). Its header says how it processes; what differs from librdkafka's: one
transaction per poll batch (at most records_per_txn inputs; commit_interval_ms is not
used), and a fencing error closes and remakes both clients.

`JavaProcessor` is its parent-side handle, with the calls of a WorkerProcess (start,
request_stop, stop, kill, is_alive, exitcode, died), so a pipeline treats both
processors alike. Its stdout lines become the history (`PipelineLineConverter`):
`recv` -> `consumed` rows (phase run, its group), `commit` -> `commits` rows, every
`pipeline-*` line a `client` event of that name (target the instance, detail the
pipeline), an `error` line a `pipeline-error` event (and workload-died when fatal).
The client's log goes to `workloads/java-<instance>/stderr.log`.

Exit codes: 0 after a stop, 3 after a fatal error.
"""
from __future__ import annotations

import threading
import uuid
from pathlib import Path
from typing import TYPE_CHECKING, Any

from core.history import WORKLOAD_DIED, EventLog, HistoryWriter
from workloads import java_build
from workloads.java_build import JavaProgram
from workloads.java_clients import _parse
from workloads.java_process import JavaProcess
from workloads.pipeline_processor import ProcessorSettings

if TYPE_CHECKING:
    from core.context import RunContext

# what both Java pipeline processors (this one and java_streams.py's) are built on
PIPELINE_PROGRAM = Path(__file__).parent / "java" / "PipelineProgram.java"
KEY_COUNTS = Path(__file__).parent / "java" / "KeyCounts.java"
PIPELINE_PROCESSOR = JavaProgram(
    source=Path(__file__).parent / "java" / "PipelineProcessor.java", main="PipelineProcessor",
    class_dir="/opt/harness-pipeline", cache_name="pipeline-processor",
    train_args=("--pipeline", "train", "--group", "train", "--input", "t", "--output", "u",
                "--name", "train"),
    train_conf=(("bootstrap.servers", "127.0.0.1:1"),),
    debug_loggers=("org.apache.kafka.clients.producer.internals.TransactionManager",),
    shared=(PIPELINE_PROGRAM, KEY_COUNTS))
FATAL_EXIT = 3
KILLED_EXIT = 137


def prepared_processor(image: str, run_id: str) -> Path:
    """PipelineProcessor's jar and class archive for `image` (java_build.prepared)."""
    return java_build.prepared(PIPELINE_PROCESSOR, image, run_id)


def processor_args(s: ProcessorSettings, instance: str) -> list[str]:
    """PipelineProcessor's arguments (the `--config` file is added by _run_tool)."""
    opts = {"pipeline": s.pipeline, "group": s.group_id, "input": s.input_topic,
            "output": s.output_topic, "name": instance, "processing": s.processing,
            "keyed": int(s.keyed), "transactional-id": s.transactional_id,
            "records-per-txn": s.records_per_txn, "output-size": s.output_size,
            "session-timeout-ms": s.session_timeout_ms,
            "transaction-timeout-ms": s.transaction_timeout_ms,
            "restore-timeout-ms": int(s.restore_timeout_s * 1000)}
    return [x for k, v in opts.items() for x in (f"--{k}", str(v))]


class PipelineLineConverter:
    """PipelineProcessor's lines -> `consumed` and `commits` rows and `client` events."""

    def __init__(self, s: ProcessorSettings, instance: str, consumed: HistoryWriter,
                 commits: HistoryWriter, events: EventLog | None):
        self.s, self.instance = s, instance
        self.consumed, self.commits, self.events = consumed, commits, events
        self.fatal: dict[str, Any] | None = None
        self.started: dict[str, Any] | None = None

    def feed(self, line: str) -> None:
        ev = _parse(line)
        if ev is None:
            return
        kind, ts = ev.pop("ev", None), int(ev.pop("ts", 0) or 0) or None
        if kind == "recv":
            self._recv(ev, ts)
        elif kind == "commit":
            self.commits.extend({"consumer": self.instance, "group_id": self.s.group_id,
                                 "topic": self.s.input_topic, "partition": p, "offset": o,
                                 "ok": bool(ev.get("ok")), "error": ev.get("err"), "ts_us": ts}
                                for p, o in ev.get("offsets") or [])
        elif kind == "error":
            self._event("pipeline-error", ts, **ev)
            if ev.get("fatal"):
                self.fatal = ev
                self._event(WORKLOAD_DIED, ts, workload="pipeline-processor", fatal=True,
                            error=f"{ev.get('err')}: {ev.get('reason')}"[:500])
        elif isinstance(kind, str) and kind.startswith("pipeline-"):
            if kind == "pipeline-start":
                self.started = ev
            self._event(kind, ts, **ev)

    def _recv(self, ev: dict[str, Any], ts: int | None) -> None:
        first, assignment = int(ev.get("ps") or 0), ev.get("a")
        self.consumed.extend(
            {"consumer": self.instance, "group_id": self.s.group_id, "phase": "run",
             "topic": self.s.input_topic, "partition": p, "offset": o, "key": key,
             "record_id": rid, "isolation": "read_committed", "recv_ts_us": ts,
             "poll_seq": first + i, "leader_epoch": epoch, "assignment": assignment}
            for i, (p, o, key, rid, epoch) in enumerate(ev.get("recs") or []))

    def _event(self, name: str, ts: int | None, **detail: Any) -> None:
        if self.events is not None:
            self.events.emit("client", name, self.instance, ts_us=ts, pipeline=self.s.pipeline,
                             group_id=self.s.group_id, **detail)


def processor_config(s: ProcessorSettings, bootstrap: str) -> dict[str, Any]:
    """The client settings file: how to reach the cluster, and the pipeline's
    client_config (the processor's own settings come from its arguments)."""
    return {"bootstrap.servers": bootstrap, **s.client_config}


class JavaProcessor(JavaProcess):
    """Parent-side handle of one Java processor instance (java_process.JavaProcess), its
    stdout lines converted as they come; with the calls of a WorkerProcess. A subclass
    runs another program writing the same lines (java_streams.StreamsProcessor)."""
    PROGRAM = PIPELINE_PROCESSOR

    def arguments(self, s: ProcessorSettings, instance: str) -> list[str]:
        return processor_args(s, instance)

    def __init__(self, s: ProcessorSettings, instance: str, run: "RunContext",
                 clients_version: str | None = None, timeout_s: float = 3600.0):
        wn = f"{s.pipeline}-{instance}-{uuid.uuid4().hex[:6]}"
        self.consumed = HistoryWriter(run.dir, "consumed", run.run_id, writer_name=wn,
                                      flush_rows=20000, flush_seconds=1.0)
        self.commits = HistoryWriter(run.dir, "commits", run.run_id, writer_name=wn,
                                     flush_seconds=1.0)
        self.conv = PipelineLineConverter(s, instance, self.consumed, self.commits, run.events)
        super().__init__(self.PROGRAM, run, instance, self.arguments(s, instance),
                         processor_config(s, run.bootstrap), self.conv.feed,
                         clients_version=clients_version, timeout_s=timeout_s,
                         ok_exits=(0, FATAL_EXIT))
        self.s, self.instance, self.killed = s, instance, False
        self._closed = threading.Lock()

    def failed(self, error: str) -> None:
        self.conv._event(WORKLOAD_DIED, None, workload="pipeline-processor", error=error)

    def ended(self) -> None:
        with self._closed:
            self.consumed.close()
            self.commits.close()

    @property
    def died(self) -> bool:
        return self.exitcode not in (None, 0) and not self.killed

    def request_stop(self) -> None:
        """SIGTERM (its batch ends, both clients close); no wait."""
        super().stop(0)

    def stop(self, timeout: float = 30.0) -> int | None:
        """A clean stop, SIGKILL if it has not ended `timeout` s later (plus the JVM's
        own close: a close of 10 s per client)."""
        if not super().stop(timeout + 15):
            self.kill()
        return self.exitcode

    def kill(self, timeout: float = 10.0) -> int | None:
        """A death: the container SIGKILLed now (no commit, no close)."""
        self.killed = True
        super().kill(timeout)
        return self.exitcode
