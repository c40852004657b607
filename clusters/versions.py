"""Kafka versions the harness can run. Adding a version is one line in KAFKA_VERSIONS."""
from __future__ import annotations

from dataclasses import dataclass

from harness.errors import SpecError


@dataclass(frozen=True)
class KafkaVersion:
    version: str            # exact Maven Central version of org.apache.kafka:kafka_2.13
    zookeeper: bool         # whether ZooKeeper mode exists in this version
    # Jars Maven does not bring in transitively but the broker needs at run time
    # (4.x declares no slf4j binding: without one the broker logs nothing).
    extra_jars: tuple[str, ...] = ()

    @property
    def major(self) -> int:
        return int(self.version.split(".")[0])

    @property
    def line(self) -> str:
        """'3.9', '4.4', …: the metadata.version family this release introduces."""
        return ".".join(self.version.split(".")[:2])


# alias → version. Aliases let scenarios say "3.9" or "4" and get the newest patch.
KAFKA_VERSIONS: dict[str, KafkaVersion] = {
    "3.9": KafkaVersion("3.9.2", zookeeper=True),
    # 4.4.0 is only partly on Maven Central (no kafka-tools 4.4.0), so 4.3.1 is the newest whole 4.x.
    "4": KafkaVersion("4.3.1", zookeeper=False,
                      extra_jars=("org.apache.logging.log4j:log4j-slf4j-impl:2.25.4",)),
}

DEFAULT_VERSION = "4"
JMX_EXPORTER_VERSION = "1.0.1"
TOXIPROXY_MODULE = "github.com/Shopify/toxiproxy/v2"
TOXIPROXY_VERSION = "v2.5.0"


def resolve_version(name: str) -> KafkaVersion:
    """Accept an alias ('3.9', '4') or an exact pinned version ('3.9.2')."""
    if name in KAFKA_VERSIONS:
        return KAFKA_VERSIONS[name]
    for v in KAFKA_VERSIONS.values():
        if v.version == name:
            return v
    known = ", ".join(f"{a} ({v.version})" for a, v in KAFKA_VERSIONS.items())
    raise SpecError("version", f"unknown Kafka version {name!r}",
                    f"use one of {known}, or add a line to clusters/versions.py")


def all_versions() -> list[KafkaVersion]:
    return list(KAFKA_VERSIONS.values())
