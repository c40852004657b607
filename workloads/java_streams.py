"""The Kafka Streams pipeline processor (`client: streams`): `java/StreamsProcessor.java`,
a Streams application (a per-key count in a KeyValueStore, processing.guarantee
exactly_once_v2 or at_least_once), the third processor of the pipeline family, writing
outputs, rows and events of the same form as the Java one (java_pipeline.py), so the
drain and the checker read all three alike. What Streams does not tell its application
is left out and said so: an output's transaction is "-" (the drain reads pipeline_txn as
null, so int_send_skip and int_poll_skip do not judge its outputs), its offset commits
are not `commits` rows, its fencing is handled inside Streams (no pipeline-fenced), its
deliveries carry no leader epoch.

Its jars: the Kafka image carries kafka-clients but not Kafka Streams, so kafka-streams
and its runtime dependencies (rocksdbjni …) of the image's Kafka version (the brokers',
or `workload.clients_version`) are resolved by Maven from Maven Central into the harness
cache (clusters.images.kafka_streams_jars: a pom and dependency:copy-dependencies, as the
images' own jars are) and bind-mounted read-only into each instance's one-off container
at STREAMS_LIBS, after the image's jars on the classpath. That is simpler than an image
layer of its own (no build, no second image to label, tag and remove): the container is
the one every Java program of ours runs in (labelled with the run id, always removed,
reaped by `harness gc`). The program is compiled against those jars, with a class archive
(java_build.prepared, cached by source, image and jars).

RocksDB's state.dir is a tmpfs of the container (STATE_DIR), gone with it: a restarted
instance restores its counts from the store's changelog topic, as a moved task does.
application.id is the pipeline's group (its name unless group_id says otherwise), so the
instances of one pipeline share it, its committed offsets are the group's (what the
graceful stop's catch-up reads), and its changelog topic is `<group>-counts-changelog`.
"""
from __future__ import annotations

import re
from pathlib import Path

from clusters.docker_env import docker_client
from clusters.images import kafka_streams_jars
from core.errors import HarnessError
from workloads import java_build
from workloads.java_build import JavaProgram
from workloads.java_pipeline import PIPELINE_PROGRAM, JavaProcessor
from workloads.pipeline_processor import ProcessorSettings

STREAMS_LIBS = "/opt/harness-streams-libs"
STATE_DIR = "/state"
STATE_TMPFS = "size=256m"
VERSION_LABEL = "harness.kafka-version"

STREAMS_PROCESSOR = JavaProgram(
    source=Path(__file__).parent / "java" / "StreamsProcessor.java", main="StreamsProcessor",
    class_dir="/opt/harness-streams", cache_name="streams-processor",
    train_args=("--pipeline", "train", "--group", "train", "--input", "t", "--output", "u",
                "--name", "train", "--state-dir", "/tmp/streams-train"),
    train_conf=(("bootstrap.servers", "127.0.0.1:1"),),
    debug_loggers=(), libs_dir=STREAMS_LIBS,
    shared=(PIPELINE_PROGRAM,))


def image_version(image: str) -> str:
    """The Kafka version of one of our Kafka images (its label)."""
    version = (docker_client().images.get(image).labels or {}).get(VERSION_LABEL)
    if not version:
        raise HarnessError(f"image {image} has no {VERSION_LABEL} label (rebuild it: harness "
                           "images build)")
    return version


class StreamsJarsMissing(HarnessError):
    """Maven could not fetch Kafka Streams' jars of a version."""

    def __init__(self, version: str, why: str):
        self.version = version
        # Maven's first error line says which artifact; the rest is its advice
        plain = re.sub(r"\x1b\[[0-9;]*m", "", why)
        errors = [line.replace("[ERROR]", "").strip() for line in plain.splitlines()
                  if "[ERROR]" in line and line.replace("[ERROR]", "").strip()]
        super().__init__(f"Kafka Streams {version}'s jars could not be fetched from Maven "
                         f"Central: {(errors[0] if errors else why)[:500]}")


def streams_libs(image: str) -> Path:
    """Kafka Streams' jars of the image's Kafka version (Maven Central, cached)."""
    version = image_version(image)
    try:
        return kafka_streams_jars(version)
    except HarnessError as e:
        raise StreamsJarsMissing(version, str(e)) from None


def prepared_streams(image: str, run_id: str) -> Path:
    """StreamsProcessor's jar and class archive for `image` (java_build.prepared), its
    Streams jars fetched first."""
    return java_build.prepared(STREAMS_PROCESSOR, image, run_id, streams_libs(image))


def streams_args(s: ProcessorSettings, instance: str, protocol: str) -> list[str]:
    """StreamsProcessor's arguments (the `--config` file is added by _run_tool)."""
    opts = {"pipeline": s.pipeline, "group": s.group_id, "input": s.input_topic,
            "output": s.output_topic, "name": instance, "processing": s.processing,
            "keyed": int(s.keyed), "output-size": s.output_size,
            "session-timeout-ms": s.session_timeout_ms,
            "transaction-timeout-ms": s.transaction_timeout_ms,
            "commit-interval-ms": s.commit_interval_ms, "streams-protocol": protocol,
            "state-dir": STATE_DIR}
    return [x for k, v in opts.items() for x in (f"--{k}", str(v))]


class StreamsProcessor(JavaProcessor):
    """One Streams instance: a JavaProcessor running StreamsProcessor.java, its Streams
    jars mounted and its state on a tmpfs."""
    PROGRAM = STREAMS_PROCESSOR
    tmpfs = ((STATE_DIR, STATE_TMPFS),)

    def __init__(self, s: ProcessorSettings, instance: str, run, clients_version: str | None = None,
                 protocol: str = "classic", timeout_s: float = 3600.0):
        self.protocol = protocol
        super().__init__(s, instance, run, clients_version, timeout_s)

    def arguments(self, s: ProcessorSettings, instance: str) -> list[str]:
        return streams_args(s, instance, self.protocol)

    def libs(self, image: str) -> Path | None:
        return streams_libs(image)
