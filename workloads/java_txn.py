"""The Java transactional producer (`client: java`): Kafka's own client, so that
transactions v2 (KIP-890 part 2, a 4.x client on a 4.x cluster) can be compared with
v1 (librdkafka, a 3.x Java client, or a cluster held at transaction.version 1).

`java/TxnProducer.java` is compiled here (javac, `--release 11`) against the
kafka-clients jar of the image it runs in (the brokers' version, or
`workload.clients_version`) into a jar, with a class archive of what it loads (a
training run with no cluster: the JVM's start on busy cores), cached by the source's
hash and the image's id (`prepared`; the run's images phase makes it, before the
load), and run in a one-off container of that image on the cluster's network
(java_clients._run_tool: labelled, always removed). Its duration and rate are counted
from its first transaction, after initTransactions (as librdkafka's producer's are).
Its JSON lines become the same history as librdkafka's producer writes
(TxnLineConverter):

- `begin {txn, first, n}` is the intent: seqs first..first+n-1 belong to transaction
  txn; their send_ts_us is that line's time (the client reports no per-record send time);
- `ack {seq, p, o, err}` is a delivery callback; its row is written when its
  transaction's `end {outcome}` is known: committed -> acked (offset kept), aborted ->
  failed, unknown -> indeterminate. A callback after its transaction's end is written
  at once with that outcome;
- `retry`, `reinit`, `fatal` become `client` events (`txn-retry`, `producer-reinit`,
  `client-fatal`), every end a `transaction` event;
- at the end, a seq announced with no row is indeterminate (NO_DELIVERY_REPORT), txn
  outcome unknown. acked_by is null (the callback names no broker).

Exit codes: 0 done, 3 a fatal error with policy stop (a death), 75 with policy restart
(ChurningProducer starts `p0.1` with the same transactional.id). Client log lines
(TransactionManager at DEBUG) go to `workloads/java-<name>/stderr.log`.
"""
from __future__ import annotations

import hashlib
import io
import shutil
import subprocess
import tarfile
import tempfile
import threading
import uuid
import zipfile
from bisect import bisect_right
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from clusters.cache import cache_dir
from clusters.docker_env import docker_client
from clusters.labels import run_labels
from core.errors import HarnessError
from core.history import CLIENT_FATAL, WORKLOAD_DIED, EventLog, HistoryWriter
from workloads import classify
from workloads.java_clients import _parse, _properties, _run_tool, java_run_of
from workloads.process import FATAL_RESTART_EXIT
from workloads.producer import NO_REPORT, ReconcileResult
from workloads.spec import ProducerSpec, txn_id_of

if TYPE_CHECKING:
    from core.context import RunContext

SOURCE = Path(__file__).parent / "java" / "TxnProducer.java"
MAIN = "TxnProducer"
JAR, ARCHIVE = f"{MAIN}.jar", f"{MAIN}.jsa"
# Where a run sees its prepared() directory (read-only). The class archive holds the
# paths its jars had when it was written, so the training run sees it at the same place.
CLASS_DIR = "/opt/harness-txn"
CLASSPATH = f"{CLASS_DIR}/{JAR}:/opt/kafka/libs/*"
# The JVM's start on 2 busy cores: C1 only and the serial collector leave the cores to
# the brokers (the producer sends at most a few hundred records/s); the JVM's own
# warnings (a class archive it cannot use) go to stderr, not to stdout, our JSON lines.
JVM_OPTS = "-Xmx256m -XX:TieredStopAtLevel=1 -XX:+UseSerialGC -Xlog:disable -Xlog:all=warning:stderr"
TRAIN_TIMEOUT_S = 120
FATAL_STOP_EXIT = 3
_STATUS = {"committed": classify.ACKED, "aborted": classify.FAILED,
           "unknown": classify.INDETERMINATE}
_EVENTS = {"retry": "txn-retry", "reinit": "producer-reinit", "fatal": CLIENT_FATAL}
LOG4J = ("log4j.rootLogger=INFO, stderr\n"
         "log4j.appender.stderr=org.apache.log4j.ConsoleAppender\n"
         "log4j.appender.stderr.Target=System.err\n"
         "log4j.appender.stderr.layout=org.apache.log4j.PatternLayout\n"
         "log4j.appender.stderr.layout.ConversionPattern=[%d] %p %m (%c)%n\n"
         "log4j.logger.org.apache.kafka.clients.producer.internals.TransactionManager=DEBUG\n")
LOG4J2 = """Configuration:
  Appenders:
    Console:
      name: STDERR
      target: SYSTEM_ERR
      PatternLayout:
        pattern: "[%d] %p %m (%c)%n"
  Loggers:
    Root:
      level: INFO
      AppenderRef:
        - ref: STDERR
    Logger:
      - name: org.apache.kafka.clients.producer.internals.TransactionManager
        level: DEBUG
"""


class TxnLineConverter:
    """TxnProducer's lines -> `produced` rows and `client` events (module docstring)."""

    def __init__(self, producer: str, topic: str, txn_id: str, writer: HistoryWriter,
                 events: EventLog | None = None):
        self.producer, self.topic, self.txn_id = producer, topic, txn_id
        self.writer, self.events = writer, events
        self.txns: dict[int, dict[str, Any]] = {}     # txn -> first, n, ts, outcome, error
        self.firsts: list[int] = []                   # each begun transaction's first seq
        self.order: list[int] = []                    # and its txn
        self.acks: dict[int, dict[str, Any]] = {}     # seq -> its callback, until written
        self.written: set[int] = set()
        self.announced = 0
        self.exit_fatal: dict[str, Any] | None = None

    def feed(self, line: str) -> None:
        ev = _parse(line)
        if ev is None:
            return
        kind, ts = ev.get("ev"), int(ev.get("ts") or 0)
        if kind == "begin":
            self.txns[ev["txn"]] = {"first": ev["first"], "n": ev["n"], "ts": ts, "outcome": None}
            self.firsts.append(ev["first"])
            self.order.append(ev["txn"])
            self.announced = max(self.announced, ev["first"] + ev["n"])
        elif kind == "ack":
            self.acks[ev["seq"]] = ev
            txn = self._txn_of(ev["seq"])
            if txn is not None and self.txns[txn]["outcome"] is not None:
                self._write(txn, [ev["seq"]])            # a late callback
        elif kind == "end":
            t = self.txns.get(ev["txn"])
            if t is not None:
                t.update(outcome=ev["outcome"], error=ev.get("error"))
                self._write(ev["txn"], [s for s in range(t["first"], t["first"] + t["n"])
                                        if s in self.acks])
            self._event("transaction", ts, txn_seq=ev["txn"], outcome=ev["outcome"],
                        error=ev.get("error"), call=ev.get("call"),
                        indefinite=ev.get("indefinite") or None)
        elif kind in _EVENTS:
            detail = {("txn_seq" if k == "txn" else k): v for k, v in ev.items()
                      if k not in ("ev", "ts")}
            if kind == "fatal":
                self.exit_fatal = detail
            self._event(_EVENTS[kind], ts, **detail)

    def _txn_of(self, seq: int) -> int | None:
        i = bisect_right(self.firsts, seq) - 1        # transactions begin in seq order
        if i < 0:
            return None
        txn = self.order[i]
        t = self.txns[txn]
        return txn if seq < t["first"] + t["n"] else None

    def _write(self, txn: int, seqs: list[int], status: str | None = None) -> None:
        t = self.txns[txn]
        status = status or _STATUS[t["outcome"]]
        ok = status == classify.ACKED
        rows = []
        for s in seqs:
            a = self.acks.pop(s)
            rows.append({"producer": self.producer, "seq": s, "record_id": f"{self.producer}-{s}",
                         "topic": self.topic, "partition": a.get("p"),
                         "offset": a.get("o") if ok else None, "status": status,
                         "error": None if ok else (a.get("err") or t["error"]),
                         "send_ts_us": t["ts"], "ack_ts_us": a.get("ts"), "txn_id": self.txn_id,
                         "txn_seq": txn, "txn_outcome": t["outcome"]})
            self.written.add(s)
        self.writer.extend(rows)

    def _event(self, name: str, ts: int, **detail: Any) -> None:
        if self.events is not None:
            self.events.emit("client", name, self.producer, ts_us=ts or None, **detail)

    def finish(self) -> ReconcileResult:
        """Every announced seq without a row: indeterminate (a transaction that never
        ended: outcome unknown; a callback without an end keeps its partition)."""
        recorded, missing = len(self.written), 0
        for txn, t in sorted(self.txns.items()):
            seqs = [s for s in range(t["first"], t["first"] + t["n"]) if s not in self.written]
            if not seqs:
                continue
            if t["outcome"] is None:
                t.update(outcome="unknown", error=NO_REPORT)
            for s in seqs:
                self.acks.setdefault(s, {"err": NO_REPORT})
            self._write(txn, seqs, classify.INDETERMINATE)
            missing += len(seqs)
        return ReconcileResult(self.announced, recorded, missing)


def prepared(image: str, run_id: str) -> Path:
    """A directory holding TxnProducer.jar, compiled against the kafka-clients jar of
    `image`, and TxnProducer.jsa, its class archive (when its training run wrote one).
    Cached by the source's hash and the image's id (the same id, the same jars): a
    cached one costs no container. Made whole in a directory of its own, then renamed,
    so a run beside us never sees half of one."""
    image_id = docker_client().images.get(image).id
    key = hashlib.sha256(SOURCE.read_bytes() + image_id.encode()).hexdigest()[:12]
    out = cache_dir() / "txn-producer" / key
    if (out / JAR).exists():
        return out
    out.parent.mkdir(parents=True, exist_ok=True)
    build = Path(tempfile.mkdtemp(prefix=f"{key}-", dir=out.parent))
    try:
        build.chmod(0o755)
        _compile(build, *_clients_jar(image, run_id))
        _train(image, run_id, build)
        try:
            build.rename(out)
        except OSError:
            pass                           # a run beside us made it first
    finally:
        shutil.rmtree(build, ignore_errors=True)
    return out


def _compile(build: Path, jar_name: str, jar: bytes) -> None:
    """TxnProducer.jar in `build`: a jar, not a class directory, since the JVM archives
    classes from jars only."""
    (build / jar_name).write_bytes(jar)
    classes = build / "classes"
    try:
        subprocess.run(["javac", "--release", "11", "-Xlint:-options", "-cp", str(build / jar_name),
                        "-d", str(classes), str(SOURCE)], check=True, capture_output=True, text=True)
    except FileNotFoundError:
        raise HarnessError("javac not found: the Java transactional producer is compiled here "
                           "(apt-get install -y openjdk-17-jdk-headless)") from None
    except subprocess.CalledProcessError as e:
        raise HarnessError(f"javac failed on {SOURCE.name}: {e.stderr[-2000:]}") from None
    with zipfile.ZipFile(build / JAR, "w") as z:
        for f in sorted(classes.glob("*.class")):
            z.write(f, f.name)
    shutil.rmtree(classes)
    (build / jar_name).unlink()


def _train(image: str, run_id: str, build: Path) -> None:
    """The class archive: a run with no cluster (`--train`; network none, named
    localhost so that log4j finds its host name at once) loads the classes a real run
    loads, and the JVM writes them at its exit; a real run maps them instead of reading
    and verifying them from the jars (on 2 busy cores: the producer made 0.6-0.9 s after
    the JVM's start, 1.2-2.8 s without). Best effort: without an archive a run starts
    as it did before."""
    (build / "train.properties").write_text(_properties(
        {"bootstrap.servers": "127.0.0.1:1", "transactional.id": "train", "max.block.ms": 500}))
    (build / "log4j.properties").write_text(LOG4J)
    (build / "log4j2.yaml").write_text(LOG4J2)
    cmd = (f"exec java {JVM_OPTS} {_log_opts(CLASS_DIR)} -XX:ArchiveClassesAtExit={CLASS_DIR}/{ARCHIVE} "
           f"-cp '{CLASSPATH}' {MAIN} --train 1 --topic t --name train --records-per-txn 1 "
           f"--config {CLASS_DIR}/train.properties > {CLASS_DIR}/train.log 2>&1")
    c = docker_client().containers.run(
        image, entrypoint=["sh", "-c"], command=[cmd], detach=True, network_mode="none",
        labels=run_labels(run_id, role="java-train"), user="root", hostname="localhost",
        volumes={str(build): {"bind": CLASS_DIR, "mode": "rw"}})
    try:
        c.wait(timeout=TRAIN_TIMEOUT_S)
    except Exception:  # noqa: BLE001 - a slow training run: no archive, nothing lost
        (build / ARCHIVE).unlink(missing_ok=True)
    finally:
        c.remove(force=True)


def _log_opts(where: str) -> str:
    return (f"-Dlog4j.configuration=file:{where}/log4j.properties "
            f"-Dlog4j2.configurationFile={where}/log4j2.yaml")


def run_opts(prepared_dir: Path, extra: str = "") -> str:
    """The JVM's options for a run: ours, the log configuration in /out, the class
    archive when there is one, and `extra` (a secured cluster's)."""
    archive = f" -XX:SharedArchiveFile={CLASS_DIR}/{ARCHIVE}" if (prepared_dir / ARCHIVE).exists() else ""
    return f"{JVM_OPTS} {_log_opts('/out')}{archive} {extra}".strip()


def _clients_jar(image: str, run_id: str) -> tuple[str, bytes]:
    """(name, bytes) of /opt/kafka/libs/kafka-clients-*.jar in the image (a container
    created, never started, and removed)."""
    client = docker_client()
    c = client.containers.create(image, entrypoint=["true"], labels=run_labels(run_id, role="jar-copy"))
    try:
        stream, _ = c.get_archive("/opt/kafka/libs")
        with tarfile.open(fileobj=io.BytesIO(b"".join(stream))) as tar:
            for m in tar.getmembers():
                base = m.name.rsplit("/", 1)[-1]
                if base.startswith("kafka-clients-") and base.endswith(".jar") and "test" not in base:
                    return base, tar.extractfile(m).read()
    finally:
        c.remove(force=True)
    raise HarnessError(f"no kafka-clients jar in {image}:/opt/kafka/libs")


def java_config(spec: ProducerSpec, bootstrap: str, txn_id: str) -> dict[str, Any]:
    t = spec.transactions
    return {"bootstrap.servers": bootstrap, "transactional.id": txn_id, "acks": "all",
            "enable.idempotence": True, "transaction.timeout.ms": t.transaction_timeout_ms,
            "delivery.timeout.ms": spec.delivery_timeout_ms,
            "request.timeout.ms": spec.request_timeout_ms, "linger.ms": spec.linger_ms,
            "max.in.flight.requests.per.connection": spec.max_in_flight,
            "max.block.ms": t.end_timeout_ms, **spec.client_config}


def java_args(spec: ProducerSpec) -> list[str]:
    t = spec.transactions
    opts = {"topic": spec.topic, "name": spec.name, "records-per-txn": t.records_per_txn,
            "partitions-per-txn": t.partitions_per_txn or 0, "delay-ms": t.intra_txn_delay_ms,
            "record-size": spec.record_size, "records": spec.records if spec.records is not None else -1,
            "duration-ms": int(spec.duration_s * 1000) if spec.duration_s is not None else -1,
            "end-timeout-ms": t.end_timeout_ms, "rate": spec.rate or 0, "abort-rate": t.abort_rate,
            "on-indefinite": t.on_indefinite, "seed": spec.seed, "on-fatal": spec.on_fatal}
    return [x for k, v in opts.items() for x in (f"--{k}", str(v))]


class JavaTxnProducer:
    """Parent-side handle of one Java producer incarnation (the calls of
    workloads.producer.ProducerProcess): a container run in a thread of ours."""

    def __init__(self, spec: ProducerSpec, run: "RunContext", clients_version: str | None = None):
        self.spec, self.run, self.clients_version = spec, run, clients_version
        self.result: ReconcileResult | None = None
        self.info: dict[str, Any] | None = None
        self.error: str | None = None
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._body, name=f"java-txn-{spec.name}", daemon=True)
        self.writer = HistoryWriter(run.dir, "produced", run.run_id,
                                    writer_name=f"{spec.name}-{uuid.uuid4().hex[:8]}",
                                    flush_rows=20000, flush_seconds=1.0)
        self.conv = TxnLineConverter(spec.name, spec.topic, self.txn_id, self.writer, run.events)

    @property
    def txn_id(self) -> str:
        return txn_id_of(self.spec, self.run.run_id)

    def start(self) -> "JavaTxnProducer":
        self._event("producer-start", tool=MAIN, clients_version=self.clients_version)
        self._thread.start()
        return self

    def _body(self) -> None:
        try:
            jrun = java_run_of(self.run, self.clients_version)
            ready = prepared(jrun.image, self.run.run_id)
            out = Path(self.run.dir) / "workloads" / f"java-{self.spec.name}"
            out.mkdir(parents=True, exist_ok=True)
            (out / "log4j.properties").write_text(LOG4J)
            (out / "log4j2.yaml").write_text(LOG4J2)
            # ours replace the tools' default heap; a secured cluster's -D options stay
            extra = " ".join(o for o in jrun.java_opts.split() if not o.startswith("-Xmx"))
            jrun = replace(jrun, java_opts=run_opts(ready, extra),
                           volumes=(*jrun.volumes, (str(ready), CLASS_DIR)))
            duration = self.spec.duration_s or 600.0
            self.info = _run_tool(
                jrun, self.spec.name, MAIN, java_args(self.spec),
                java_config(self.spec, self.run.bootstrap, self.txn_id), "--config", out,
                self.conv.feed, duration + 300, self._stop.is_set,
                classpath=CLASSPATH,
                ok_exits=(0, FATAL_STOP_EXIT, FATAL_RESTART_EXIT))
        except Exception as e:  # noqa: BLE001 - recorded as the workload's death
            self.error = f"{type(e).__name__}: {e}"[:800]

    def is_alive(self) -> bool:
        return self._thread.is_alive()

    @property
    def exitcode(self) -> int | None:
        if self._thread.is_alive() or not self._thread.ident:
            return None
        if self.error is not None:
            return 1
        return (self.info or {}).get("exit_code")

    def wait(self, timeout: float | None = None) -> bool:
        self._thread.join(timeout)
        if self._thread.is_alive():
            return False
        self._finish()
        return True

    def stop(self, timeout: float | None = None) -> ReconcileResult:
        self._stop.set()              # SIGTERM: the open transaction ends, then it stops
        self._thread.join(timeout if timeout is not None else self.spec.delivery_timeout_ms / 1000 + 60)
        return self._finish()

    def kill(self) -> ReconcileResult:
        return self.stop(5.0)

    def _finish(self) -> ReconcileResult:
        if self.result is None:
            self.result = self.conv.finish()
            self.writer.close()
            code = self.exitcode
            self._event("producer-end", exitcode=code, announced=self.result.announced,
                        indeterminate_written=self.result.indeterminate)
            if self.error is not None or code == FATAL_STOP_EXIT:
                fatal = self.conv.exit_fatal or {}
                self._event(WORKLOAD_DIED, workload="producer", exitcode=code,
                            fatal=code == FATAL_STOP_EXIT or None,
                            error=self.error or f"{fatal.get('error')}: {fatal.get('reason')}")
        return self.result

    def _event(self, name: str, **detail: Any) -> None:
        if self.run.events is not None:
            self.run.events.emit("client", name, self.spec.name, **detail)
