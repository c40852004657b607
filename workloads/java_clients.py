"""Kafka's own VerifiableProducer / VerifiableConsumer, judged by the same history.

They run in a one-off container from our Kafka image on the cluster's network
(labelled harness.run-id, always removed). Their JSON event lines go to a file
in a bind-mounted host directory (not through `docker logs`, whose per-line
overhead in dockerd would slow the tool down), and we tail that file and
convert each line into history rows as it arrives.

Mapping (documented in workloads/README.md):
- The producer is run with --value-prefix N and named "j<N>"; its value
  "N.k" is its k-th send, so record_id "j<N>-k", seq k. Every consumer of ours
  parses that value form (workloads/records.py).
- producer_send_success -> acked (partition, offset); producer_send_error ->
  classify.java_status(exception). The tool reports no send time, so
  send_ts_us = ack_ts_us = the event's timestamp (ms -> us).
- Seqs it sent with no event (killed, or still in flight) -> indeterminate,
  error NO_DELIVERY_REPORT. "Sent" is tool_data.sent when the tool printed it,
  else max_messages (a tool killed early makes its unsent tail indeterminate).
- Consumer: record_data (needs --verbose) -> consumed, offsets_committed ->
  commits, partitions_assigned/revoked -> events (client, rebalance).
"""
from __future__ import annotations

import json
import shlex
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from clusters.api import JavaClientAccess
from clusters.docker_env import docker_client
from clusters.images import ensure_images
from clusters.labels import run_labels
from core.errors import HarnessError
from core.history import EventLog, HistoryWriter, now_us
from workloads import classify
from workloads.producer import NO_REPORT
from workloads.records import java_producer_name, record_id_of
from workloads.spec import idempotent_by_default

if TYPE_CHECKING:
    from core.context import RunContext

TOOLS = "org.apache.kafka.tools"
CLASSPATH = "/opt/kafka/libs/*"


def _java_simple_name(exception: str | None) -> str | None:
    if not exception:
        return None
    return exception.replace("class ", "").strip().rsplit(".", 1)[-1]


def _parse(line: str) -> dict[str, Any] | None:
    line = line.strip()
    if not line.startswith("{"):
        return None                    # log lines and deprecation notices share stdout
    try:
        return json.loads(line)
    except json.JSONDecodeError:
        return None


def _event(line: str) -> tuple[dict[str, Any], Any, int] | None:
    """(event, its name, its time in µs) of one JSON line of a Java tool, else None."""
    ev = _parse(line)
    if ev is None:
        return None
    return ev, ev.get("name"), int(ev.get("timestamp", 0)) * 1000 or now_us()


class JavaProducerConverter:
    """VerifiableProducer event lines -> `produced` rows."""

    def __init__(self, prefix: int, topic: str, max_messages: int, writer: HistoryWriter,
                 events: EventLog | None = None):
        self.prefix, self.topic, self.max_messages = prefix, topic, max_messages
        self.producer = java_producer_name(prefix)
        self.writer, self.events = writer, events
        self.reported = bytearray(max_messages)
        self.counts = {"acked": 0, "failed": 0, "indeterminate": 0}
        self.tool_data: dict[str, Any] | None = None
        self.first_ts_us: int | None = None
        self.last_ts_us: int | None = None
        self.startup_ts_us: int | None = None      # printed just before the send loop

    def _seq(self, value: str) -> int | None:
        p, _, n = (value or "").partition(".")
        if p != str(self.prefix) or not n.isdigit():
            return None
        return int(n)

    def feed(self, line: str) -> None:
        event = _event(line)
        if event is None:
            return
        ev, name, ts = event
        if name in ("producer_send_success", "producer_send_error"):
            seq = self._seq(ev.get("value"))
            if seq is None or seq >= self.max_messages:
                return
            self.first_ts_us = self.first_ts_us or ts
            self.last_ts_us = ts
            self.reported[seq] = 1
            row = {"producer": self.producer, "seq": seq,
                   "record_id": f"{self.producer}-{seq}", "key": ev.get("key"),
                   "topic": ev.get("topic") or self.topic, "send_ts_us": ts, "ack_ts_us": ts}
            if name == "producer_send_success":
                row.update(status=classify.ACKED, partition=ev.get("partition"),
                           offset=ev.get("offset"))
            else:
                row.update(status=classify.java_status(ev.get("exception")),
                           error=_java_simple_name(ev.get("exception")))
            self.counts[row["status"]] += 1
            self.writer.append(row)
        elif name == "tool_data":
            self.tool_data = ev
        if name == "startup_complete":
            self.startup_ts_us = ts
        if name in ("startup_complete", "shutdown_complete") and self.events:
            self.events.emit("client", f"java-producer-{name.split('_')[0]}", self.producer,
                             ts_us=ts)

    def finish(self) -> dict[str, int]:
        """Unreported seqs below 'sent' -> indeterminate. Returns counts."""
        sent = self.max_messages
        if self.tool_data and isinstance(self.tool_data.get("sent"), int):
            sent = min(sent, self.tool_data["sent"])
        ts = self.last_ts_us or now_us()
        missing = [s for s in range(sent) if not self.reported[s]]
        if missing:
            self.writer.append_columns(
                {"seq": missing, "record_id": [f"{self.producer}-{s}" for s in missing]},
                producer=self.producer, topic=self.topic, status=classify.INDETERMINATE,
                error=NO_REPORT, send_ts_us=ts)
        self.counts["indeterminate"] += len(missing)
        self.counts["sent"] = sent
        return dict(self.counts)


class JavaConsumerConverter:
    """VerifiableConsumer event lines -> `consumed`, `commits` and `events` rows."""

    def __init__(self, consumer: str, group_id: str, isolation: str, consumed: HistoryWriter,
                 commits: HistoryWriter, events: EventLog | None = None):
        self.consumer, self.group_id, self.isolation = consumer, group_id, isolation
        self.consumed, self.commits, self.events = consumed, commits, events
        self.records = 0
        # consumed.poll_seq / .assignment: with --verbose the tool prints every record in
        # the order it polled them, and every assignment change, so both can be told.
        self.assignment = 0

    def feed(self, line: str) -> None:
        event = _event(line)
        if event is None:
            return
        ev, name, ts = event
        if name == "record_data":
            value = ev.get("value")
            self.consumed.append({
                "consumer": self.consumer, "group_id": self.group_id, "phase": "run",
                "topic": ev["topic"], "partition": ev["partition"], "offset": ev["offset"],
                "key": ev.get("key"),
                "record_id": record_id_of(value.encode()) if value is not None else None,
                "isolation": self.isolation, "recv_ts_us": ts,
                "poll_seq": self.records, "assignment": self.assignment})
            self.records += 1
        elif name == "offsets_committed":
            ok = bool(ev.get("success"))
            for o in ev.get("offsets") or []:
                self.commits.append({"consumer": self.consumer, "group_id": self.group_id,
                                     "topic": o["topic"], "partition": o["partition"],
                                     "offset": o["offset"], "ok": ok,
                                     "error": None if ok else (ev.get("error") or "unknown"),
                                     "ts_us": ts})
        elif name in ("partitions_assigned", "partitions_revoked"):
            self.assignment += 1
            if self.events is None:
                return
            self.events.emit("client", "rebalance", self.consumer, ts_us=ts,
                             type=name.split("_")[1], group_id=self.group_id,
                             partitions=[[p["topic"], p["partition"]]
                                         for p in ev.get("partitions") or []])
        elif name in ("startup_complete", "shutdown_complete") and self.events:
            self.events.emit("client", f"java-consumer-{name.split('_')[0]}", self.consumer,
                             ts_us=ts, group_id=self.group_id)


def _properties(conf: dict[str, Any]) -> str:
    return "".join(f"{k}={str(v).lower() if isinstance(v, bool) else v}\n" for k, v in conf.items())


@dataclass(frozen=True)
class JavaRun:
    """Where and how to run the Java tools: our Kafka image on the cluster network."""
    image: str
    network: str
    run_id: str
    java_opts: str = "-Xmx512m"
    # a secured cluster's (clusters.api.JavaClientAccess): client settings (the password
    # named, not written), the environment that holds it, and the mounts the files need
    settings: tuple[tuple[str, str], ...] = ()
    env: tuple[tuple[str, str], ...] = ()
    volumes: tuple[tuple[str, str], ...] = ()
    # tmpfs mounts (path, options): a program's scratch space, gone with its container
    tmpfs: tuple[tuple[str, str], ...] = ()


def _run_tool(run: JavaRun, name: str, main_class: str, args: list[str], conf: dict[str, Any],
              conf_flag: str, out_dir: Path, feed: Callable[[str], None], timeout_s: float,
              should_stop: Callable[[], bool] | None = None, classpath: str = CLASSPATH,
              ok_exits: tuple[int, ...] = (0,),
              should_kill: Callable[[], bool] | None = None,
              on_container: Callable[[Any], None] | None = None) -> dict[str, Any]:
    """Run one tool to completion, feeding each stdout line; the container is always
    removed. `main_class`: a tool of Kafka's (VerifiableProducer) or a qualified name;
    an exit code outside `ok_exits` (unless we stopped it) is an error. should_stop()
    true: SIGTERM (a clean stop); should_kill() true: SIGKILL at once (a death);
    on_container(container): for a caller that kills it itself, without our poll's wait."""

    out_dir.mkdir(parents=True, exist_ok=True)
    (out_dir / "client.properties").write_text(_properties({**dict(run.settings), **conf}))
    events_file = out_dir / "events.jsonl"
    events_file.touch()
    main = main_class if "." in main_class or classpath != CLASSPATH else f"{TOOLS}.{main_class}"
    cmd = (f"exec java {run.java_opts} -cp {shlex.quote(classpath)} {main} "
           f"{' '.join(shlex.quote(a) for a in args)} {conf_flag} /out/client.properties "
           f"> /out/events.jsonl 2> /out/stderr.log")
    client = docker_client()
    container = client.containers.run(
        run.image, entrypoint=["sh", "-c"], command=[cmd], detach=True, network=run.network,
        name=f"harness-{run.run_id}-{name}-{uuid.uuid4().hex[:4]}",
        labels=run_labels(run.run_id, role="java-client"), environment=dict(run.env),
        volumes={str(out_dir.resolve()): {"bind": "/out", "mode": "rw"},
                 **{host: {"bind": inside, "mode": "ro"} for host, inside in run.volumes}},
        user="root", **({"tmpfs": dict(run.tmpfs)} if run.tmpfs else {}))
    started = time.monotonic()
    try:
        if on_container is not None:
            on_container(container)
        exit_code, stop_sent_at = _follow(container, events_file, feed, started, timeout_s, should_stop,
                                          should_kill)
    finally:
        try:
            container.remove(force=True)
        except Exception:
            pass
    stderr = (out_dir / "stderr.log").read_text(errors="replace") if (out_dir / "stderr.log").exists() else ""
    if exit_code not in ok_exits and stop_sent_at is None:
        raise HarnessError(f"{main_class} exited with {exit_code}: {stderr[-2000:]}")
    return {"exit_code": exit_code, "stopped": stop_sent_at is not None,
            "seconds": time.monotonic() - started}


TERM_AGAIN_S = 2.0


def _follow(container, events_file: Path, feed: Callable[[str], None], started: float,
            timeout_s: float, should_stop: Callable[[], bool] | None,
            should_kill: Callable[[], bool] | None = None) -> tuple[int | None, float | None]:
    """Feed the tool's stdout lines until its container ends: (exit code, when we sent
    SIGTERM or SIGKILL, or None). SIGTERM runs the tool's shutdown hook (flush,
    tool_data), sent again every TERM_AGAIN_S until it ends; SIGKILL 30 s after the
    first if it has not ended, or at once when should_kill()."""
    stop_sent_at: float | None = None
    term_sent_at = 0.0
    killed = False
    with open(events_file) as fh:
        buf = ""
        while True:
            chunk = fh.read(1 << 20)
            if chunk:
                buf += chunk
                lines = buf.split("\n")
                buf = lines.pop()
                for line in lines:
                    feed(line)
                continue
            container.reload()
            now = time.monotonic()
            if container.status not in ("created", "running"):
                for line in (buf + fh.read()).split("\n"):
                    feed(line)
                if stop_sent_at is None and should_kill and should_kill():
                    stop_sent_at = now             # killed by our caller, through on_container
                return container.attrs["State"]["ExitCode"], stop_sent_at
            if not killed and should_kill and should_kill():
                try:
                    container.kill(signal="SIGKILL")
                except Exception:  # noqa: BLE001 - it ended meanwhile: the next reload sees it
                    pass
                killed, stop_sent_at = True, stop_sent_at or now
            elif stop_sent_at is None and (now - started > timeout_s or (should_stop and should_stop())):
                container.kill(signal="SIGTERM")
                stop_sent_at = term_sent_at = now
            elif stop_sent_at is not None and now - stop_sent_at > 30:
                container.kill(signal="SIGKILL")
            elif stop_sent_at is not None and not killed and now - term_sent_at >= TERM_AGAIN_S:
                # a SIGTERM that lands before the JVM has set its handlers is dropped (the
                # container's PID 1: `sh`, then java): seen, a share member restarted 0.3 s
                # before the run's end ran on 31 s and was SIGKILLed, counted as dead
                try:
                    container.kill(signal="SIGTERM")
                except Exception:  # noqa: BLE001 - it ended meanwhile: the next reload sees it
                    pass
                term_sent_at = now
            time.sleep(0.1)


def java_run_of(run: "RunContext", version: str | None = None) -> JavaRun:
    """Our Kafka image on the run's cluster network: the brokers' version as the cluster
    started, or `version` (the scenario's `workload.clients_version`; its image built on
    first use)."""
    image = run.cluster.image
    if version:
        image = ensure_images([version])[f"kafka-{version}"]
    settings, env, volumes = run.cluster.java_client() if isinstance(run.cluster, JavaClientAccess) \
        else ({}, {}, {})
    opts = JavaRun.java_opts
    if "config.providers" in settings:
        # Kafka 3.8+ lets a client instantiate only the config providers this names
        opts += f" -Dorg.apache.kafka.automatic.config.providers={settings['config.providers.env.class']}"
    return JavaRun(image=image, network=run.cluster.network_name, run_id=run.run_id, java_opts=opts,
                   settings=tuple(settings.items()), env=tuple(env.items()), volumes=tuple(volumes.items()))


def run_java_producer(run: "RunContext", *, topic: str, max_messages: int,
                      prefix: int = 0, acks: str = "all", throughput: int = -1,
                      config: dict[str, Any] | None = None, timeout_s: float = 600,
                      should_stop: Callable[[], bool] | None = None,
                      clients_version: str | None = None) -> dict[str, Any]:
    """Run VerifiableProducer for max_messages records; returns counts and timing."""
    bootstrap, run_dir, events = run.bootstrap, run.dir, run.events
    jrun = java_run_of(run, clients_version)
    if max_messages < 1:
        raise HarnessError("run_java_producer needs max_messages >= 1 (we must know what was sent)")
    name = java_producer_name(prefix)
    writer = HistoryWriter(run_dir, "produced", run.run_id, writer_name=f"{name}-{uuid.uuid4().hex[:6]}",
                           flush_rows=20000, flush_seconds=1.0)
    conv = JavaProducerConverter(prefix, topic, max_messages, writer, events)
    # The tool forces retries=0 unless the config file says otherwise; keep client defaults.
    conf = {"retries": 2147483647, "enable.idempotence": idempotent_by_default(acks),
            **(config or {})}
    acks_arg = {"all": "-1", "-1": "-1", "1": "1", "0": "0"}[str(acks)]
    args = ["--bootstrap-server", bootstrap, "--topic", topic, "--max-messages", str(max_messages),
            "--throughput", str(throughput), "--acks", acks_arg, "--value-prefix", str(prefix)]
    if events:
        events.emit("client", "producer-start", name, tool="VerifiableProducer",
                    max_messages=max_messages)
    try:
        info = _run_tool(jrun, name, "VerifiableProducer", args, conf, "--producer.config",
                         Path(run_dir) / "workloads" / f"java-{name}", conv.feed, timeout_s,
                         should_stop)
    finally:
        counts = conv.finish()
        writer.close()
    span = ((conv.last_ts_us or 0) - (conv.first_ts_us or 0)) / 1e6
    info.update(counts=counts, tool_data=conv.tool_data, first_ack_us=conv.first_ts_us,
                last_ack_us=conv.last_ts_us, ack_span_s=span, startup_us=conv.startup_ts_us)
    if events:
        events.emit("client", "producer-end", name, **counts)
    return info


def run_java_consumer(run: "RunContext", *, topic: str, group_id: str,
                      name: str = "jc0", max_messages: int = -1, isolation: str = "read_uncommitted",
                      auto_commit: bool = False, config: dict[str, Any] | None = None,
                      timeout_s: float = 600,
                      should_stop: Callable[[], bool] | None = None,
                      clients_version: str | None = None) -> dict[str, Any]:
    """Run VerifiableConsumer (verbose) until max_messages or should_stop()/timeout."""
    bootstrap, run_dir, events = run.bootstrap, run.dir, run.events
    jrun = java_run_of(run, clients_version)
    wn = f"{name}-{uuid.uuid4().hex[:6]}"
    consumed = HistoryWriter(run_dir, "consumed", run.run_id, writer_name=wn, flush_rows=20000,
                             flush_seconds=1.0)
    commits = HistoryWriter(run_dir, "commits", run.run_id, writer_name=wn, flush_seconds=1.0)
    conv = JavaConsumerConverter(name, group_id, isolation, consumed, commits, events)
    args = ["--bootstrap-server", bootstrap, "--topic", topic, "--group-id", group_id,
            "--max-messages", str(max_messages), "--verbose", "--reset-policy", "earliest"]
    if auto_commit:
        args.append("--enable-autocommit")
    conf = {"isolation.level": isolation, **(config or {})}
    try:
        info = _run_tool(jrun, name, "VerifiableConsumer", args, conf, "--consumer.config",
                         Path(run_dir) / "workloads" / f"java-{name}", conv.feed, timeout_s,
                         should_stop)
    finally:
        consumed.close()
        commits.close()
    info["records"] = conv.records
    return info
