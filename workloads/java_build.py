"""Our Java programs (java/*.java: the transactional producer, the share-group member),
compiled here and run in a one-off container of a Kafka image (java_clients._run_tool).

Each one is compiled (javac, `--release 11`) against the kafka-clients jar of the image it
runs in (the brokers' version, or `workload.clients_version`) into a jar, with a class
archive of what it loads (a training run with no cluster: the JVM's start on busy cores),
cached by the source's hash and the image's id (`prepared`). A run sees that directory,
read-only, at the program's `class_dir`, and its log configuration (the program's own
loggers at DEBUG, into stderr) in its /out directory (`write_log_config`).
"""
from __future__ import annotations

import hashlib
import io
import shutil
import subprocess
import tarfile
import zipfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from clusters.cache import built_in_place, cache_dir
from clusters.docker_env import docker_client
from clusters.labels import run_labels
from core.errors import HarnessError
from workloads.java_clients import _properties

# The JVM's start on 2 busy cores: C1 only and the serial collector leave the cores to
# the brokers (our programs handle at most a few hundred records/s); the JVM's own
# warnings (a class archive it cannot use) go to stderr, not to stdout, our JSON lines.
JVM_OPTS = "-Xmx256m -XX:TieredStopAtLevel=1 -XX:+UseSerialGC -Xlog:disable -Xlog:all=warning:stderr"
TRAIN_TIMEOUT_S = 120
# what every program extends: its JSON lines, timing marks and error texts, and the
# long-running programs' main (Lines.runProgram)
SHARED_SOURCES = (Path(__file__).parent / "java" / "Lines.java",)


@dataclass(frozen=True)
class JavaProgram:
    """One of our Java programs: its source, main class, where a run sees its prepared
    directory (the class archive holds the paths its jars had when it was written, so
    the training run sees it at the same place), its training run's arguments and
    client settings, and the loggers it wants at DEBUG."""
    source: Path
    main: str
    class_dir: str
    cache_name: str
    train_args: tuple[str, ...]
    train_conf: tuple[tuple[str, Any], ...]
    debug_loggers: tuple[str, ...] = ()
    # where a run sees jars the image lacks (Kafka Streams'), read-only; None: none
    libs_dir: str | None = None
    # sources it shares with some of our programs only (the pipeline processors')
    shared: tuple[Path, ...] = ()

    @property
    def sources(self) -> tuple[Path, ...]:
        return (self.source, *self.shared, *SHARED_SOURCES)

    @property
    def jar(self) -> str:
        return f"{self.main}.jar"

    @property
    def archive(self) -> str:
        return f"{self.main}.jsa"

    @property
    def classpath(self) -> str:
        # the image's jars first: a jar in both (slf4j-api …) is the image's
        extra = f":{self.libs_dir}/*" if self.libs_dir else ""
        return f"{self.class_dir}/{self.jar}:/opt/kafka/libs/*{extra}"

    def log4j(self) -> str:
        """log4j 1 (Kafka 3.x images): INFO and our DEBUG loggers, to stderr."""
        return ("log4j.rootLogger=INFO, stderr\n"
                "log4j.appender.stderr=org.apache.log4j.ConsoleAppender\n"
                "log4j.appender.stderr.Target=System.err\n"
                "log4j.appender.stderr.layout=org.apache.log4j.PatternLayout\n"
                "log4j.appender.stderr.layout.ConversionPattern=[%d] %p %m (%c)%n\n"
                + "".join(f"log4j.logger.{name}=DEBUG\n" for name in self.debug_loggers))

    def log4j2(self) -> str:
        """log4j 2 (Kafka 4.x images): the same."""
        loggers = "".join(f"      - name: {name}\n        level: DEBUG\n" for name in self.debug_loggers)
        return ("Configuration:\n  Appenders:\n    Console:\n      name: STDERR\n      target: SYSTEM_ERR\n"
                "      PatternLayout:\n        pattern: \"[%d] %p %m (%c)%n\"\n"
                "  Loggers:\n    Root:\n      level: INFO\n      AppenderRef:\n        - ref: STDERR\n"
                + (f"    Logger:\n{loggers}" if loggers else ""))


def write_log_config(program: JavaProgram, where: Path) -> None:
    (where / "log4j.properties").write_text(program.log4j())
    (where / "log4j2.yaml").write_text(program.log4j2())


def log_opts(where: str) -> str:
    return (f"-Dlog4j.configuration=file:{where}/log4j.properties "
            f"-Dlog4j2.configurationFile={where}/log4j2.yaml")


def run_opts(program: JavaProgram, prepared_dir: Path, extra: str = "") -> str:
    """The JVM's options for a run: ours, the log configuration in /out, the class
    archive when there is one, and `extra` (a secured cluster's)."""
    archive = (f" -XX:SharedArchiveFile={program.class_dir}/{program.archive}"
               if (prepared_dir / program.archive).exists() else "")
    return f"{JVM_OPTS} {log_opts('/out')}{archive} {extra}".strip()


def prepared(program: JavaProgram, image: str, run_id: str, libs: Path | None = None) -> Path:
    """A directory holding the program's jar, compiled against the kafka-clients jar of
    `image` (and the jars in `libs`, which a run sees at the program's libs_dir), and its
    class archive (when its training run wrote one). Cached by the source's hash, the
    image's id (the same id, the same jars) and `libs`: a cached one costs no container.
    Made whole in a directory of its own, then renamed, so a run beside us never sees
    half of one."""
    image_id = docker_client().images.get(image).id
    key = hashlib.sha256(b"".join(f.read_bytes() for f in program.sources)
                         + image_id.encode() + str(libs).encode()).hexdigest()[:12]
    out = cache_dir() / program.cache_name / key
    if (out / program.jar).exists():
        return out
    with built_in_place(out, f"{key}-") as build:
        _compile(program, build, *_clients_jar(image, run_id), libs=libs)
        _train(program, image, run_id, build, libs)
    return out


def _compile(program: JavaProgram, build: Path, jar_name: str, jar: bytes,
             libs: Path | None = None) -> None:
    """The program's jar in `build`: a jar, not a class directory, since the JVM
    archives classes from jars only."""
    (build / jar_name).write_bytes(jar)
    classes = build / "classes"
    cp = str(build / jar_name) + (f":{libs}/*" if libs is not None else "")
    try:
        subprocess.run(["javac", "--release", "11", "-Xlint:-options", "-cp", cp,
                        "-d", str(classes), *map(str, program.sources)], check=True, capture_output=True,
                       text=True)
    except FileNotFoundError:
        raise HarnessError(f"javac not found: {program.source.name} is compiled here "
                           "(apt-get install -y openjdk-17-jdk-headless)") from None
    except subprocess.CalledProcessError as e:
        raise HarnessError(f"javac failed on {program.source.name}: {e.stderr[-2000:]}") from None
    with zipfile.ZipFile(build / program.jar, "w") as z:
        for f in sorted(classes.glob("*.class")):
            z.write(f, f.name)
    shutil.rmtree(classes)
    (build / jar_name).unlink()


def _train(program: JavaProgram, image: str, run_id: str, build: Path,
           libs: Path | None = None) -> None:
    """The class archive: a run with no cluster (`--train 1`; network none, named
    localhost so that log4j finds its host name at once) loads the classes a real run
    loads, and the JVM writes them at its exit; a real run maps them instead of reading
    and verifying them from the jars (on 2 busy cores: the transactional producer made
    0.6-0.9 s after the JVM's start, 1.2-2.8 s without). Best effort: without an archive
    a run starts as it did before."""
    d = program.class_dir
    (build / "train.properties").write_text(_properties(dict(program.train_conf)))
    write_log_config(program, build)
    cmd = (f"exec java {JVM_OPTS} {log_opts(d)} -XX:ArchiveClassesAtExit={d}/{program.archive} "
           f"-cp '{program.classpath}' {program.main} --train 1 {' '.join(program.train_args)} "
           f"--config {d}/train.properties > {d}/train.log 2>&1")
    c = docker_client().containers.run(
        image, entrypoint=["sh", "-c"], command=[cmd], detach=True, network_mode="none",
        labels=run_labels(run_id, role="java-train"), user="root", hostname="localhost",
        volumes={str(build): {"bind": d, "mode": "rw"},
                 **({str(libs): {"bind": program.libs_dir, "mode": "ro"}}
                    if libs is not None and program.libs_dir else {})})
    try:
        c.wait(timeout=TRAIN_TIMEOUT_S)
    except Exception:  # noqa: BLE001 - a slow training run: no archive, nothing lost
        (build / program.archive).unlink(missing_ok=True)
    finally:
        c.remove(force=True)


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
