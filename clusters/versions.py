"""Kafka versions the harness can run, as data: one row per release line.

A scenario names an exact version ("4.1.2"), a release line ("4.1", "3.9", the
line's newest patch) or a major ("4": its newest line). Which patches exist comes
from Maven Central's maven-metadata.xml for org.apache.kafka:kafka_2.13 (cached for
a day under the harness cache), else from the last cached copy, else from the
pinned `patches` below, so a machine without Maven access still resolves lines;
`versions_source()` says which was used. An exact patch needs no row of its own:
its line's row says how to build and run it.
"""
from __future__ import annotations

import os
import re
import time
import urllib.request
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from clusters.cache import cache_dir
from core.errors import SpecError

# What a line can do beyond the basics (KRaft, the metadata version raised by
# kafka-features.sh). Scenario options and faults check these, not version numbers.
ELR = "eligible-leader-replicas"          # KIP-966: the eligible.leader.replicas.version feature
CONSUMER_PROTOCOL = "consumer-protocol"   # KIP-848 group.protocol=consumer, GA in 4.0
DYNAMIC_QUORUM = "dynamic-quorum"         # KIP-853: controllers added/removed (3.9+)
RELEASE_VERSION = "release-version"       # the upgrade notes say `kafka-features.sh upgrade --release-version` (4.0+)
TRANSACTION_VERSION = "transaction-version"  # KIP-890 part 2: transaction.version (4.0+; 2 = v2)
# KIP-932 share groups, switched on by the share.version feature (4.1+: preview in 4.1,
# production-ready in 4.2). 4.0's early access (unstable RPCs, 4.0 clients only) is not one.
SHARE_GROUPS = "share-groups"

LOG4J_SLF4J = "org.apache.logging.log4j:log4j-slf4j-impl:2.25.4"


@dataclass(frozen=True)
class ReleaseLine:
    line: str                      # "3.9"
    zookeeper: bool                # whether ZooKeeper mode exists in this line
    metadata_version: str          # the newest production metadata.version a new cluster gets
    patches: tuple[str, ...]       # known patches, oldest first: the offline fallback
    features: frozenset[str] = frozenset()
    elr_default: bool = False      # ELR on for a new cluster without asking
    # share.version=1 for a new cluster without asking (4.2+: SV_1's bootstrap
    # metadata.version is IBP_4_2_IV0; 4.1 formats with share.version=0)
    share_default: bool = False
    # Kafka modules besides kafka_2.13 whose jars the node image needs (kafka-server
    # is a module of its own from 3.7 on).
    modules: tuple[str, ...] = ("kafka-tools", "kafka-storage", "kafka-server")
    # Jars Maven does not bring in transitively but the broker needs at run time
    # (4.x declares no slf4j binding: without one the broker logs nothing).
    extra_jars: tuple[str, ...] = ()


_4X = dict(zookeeper=False, extra_jars=(LOG4J_SLF4J,))
_4X_FEATURES = frozenset({ELR, CONSUMER_PROTOCOL, DYNAMIC_QUORUM, RELEASE_VERSION,
                          TRANSACTION_VERSION})
_SHARE_FEATURES = _4X_FEATURES | {SHARE_GROUPS}

LINES: tuple[ReleaseLine, ...] = (
    ReleaseLine("3.6", True, "3.6-IV2", ("3.6.0", "3.6.1", "3.6.2"),
                modules=("kafka-tools", "kafka-storage")),
    ReleaseLine("3.7", True, "3.7-IV4", ("3.7.0", "3.7.1", "3.7.2")),
    ReleaseLine("3.8", True, "3.8-IV0", ("3.8.0", "3.8.1")),
    ReleaseLine("3.9", True, "3.9-IV0", ("3.9.0", "3.9.1", "3.9.2"),
                features=frozenset({DYNAMIC_QUORUM})),
    ReleaseLine("4.0", metadata_version="4.0-IV3", patches=("4.0.0", "4.0.1", "4.0.2"),
                features=_4X_FEATURES, **_4X),
    ReleaseLine("4.1", metadata_version="4.1-IV1", patches=("4.1.0", "4.1.1", "4.1.2"),
                features=_SHARE_FEATURES, elr_default=True, **_4X),
    ReleaseLine("4.2", metadata_version="4.2-IV1", patches=("4.2.0", "4.2.1", "4.2.2"),
                features=_SHARE_FEATURES, elr_default=True, share_default=True, **_4X),
    # 4.4.0 is only partly on Maven Central (no kafka-tools 4.4.0): 4.3 is the newest whole line.
    ReleaseLine("4.3", metadata_version="4.3-IV0", patches=("4.3.0", "4.3.1"),
                features=_SHARE_FEATURES, elr_default=True, share_default=True, **_4X),
)
LINE_BY_NAME = {r.line: r for r in LINES}

DEFAULT_VERSION = "4"
JMX_EXPORTER_VERSION = "1.0.1"
TOXIPROXY_MODULE = "github.com/Shopify/toxiproxy/v2"
TOXIPROXY_VERSION = "v2.5.0"

METADATA_URL = os.environ.get(
    "HARNESS_MAVEN_METADATA_URL",
    "https://repo.maven.apache.org/maven2/org/apache/kafka/kafka_2.13/maven-metadata.xml")
METADATA_MAX_AGE_S = 24 * 3600
# HARNESS_KAFKA_VERSIONS=pinned: use only the table above (tests; a machine told to stay offline).
SOURCE_ENV = "HARNESS_KAFKA_VERSIONS"


@dataclass(frozen=True)
class KafkaVersion:
    version: str            # exact Maven Central version of org.apache.kafka:kafka_2.13
    release: ReleaseLine

    @property
    def zookeeper(self) -> bool:
        return self.release.zookeeper

    @property
    def extra_jars(self) -> tuple[str, ...]:
        return self.release.extra_jars

    @property
    def major(self) -> int:
        return int(self.version.split(".")[0])

    @property
    def line(self) -> str:
        """'3.9', '4.3', …: the metadata.version family this release introduces."""
        return self.release.line

    @property
    def key(self) -> tuple[int, ...]:
        return version_key(self.version)

    def has(self, feature: str) -> bool:
        return feature in self.release.features


def version_key(version: str) -> tuple[int, ...]:
    return tuple(int(p) for p in version.split(".") if p.isdigit())


# ---- which patches exist ----------------------------------------------------------

def _cache_file() -> Path:
    return cache_dir() / "maven-metadata-kafka_2.13.xml"


def parse_metadata(xml: str) -> list[str]:
    """Release versions (x.y.z) listed in a maven-metadata.xml."""
    return [v for v in re.findall(r"<version>([^<]+)</version>", xml)
            if re.fullmatch(r"\d+\.\d+\.\d+", v)]


def _fetch_metadata(timeout_s: float = 5.0) -> str:
    with urllib.request.urlopen(METADATA_URL, timeout=timeout_s) as r:  # noqa: S310 - fixed https URL
        return r.read().decode()


@lru_cache(maxsize=1)
def served_versions() -> tuple[tuple[str, ...], str]:
    """(every x.y.z of kafka_2.13 Maven Central serves, where that list came from)."""
    pinned = tuple(p for r in LINES for p in r.patches)
    if os.environ.get(SOURCE_ENV) == "pinned":
        return pinned, "the pinned table in clusters/versions.py (HARNESS_KAFKA_VERSIONS=pinned)"
    cache = _cache_file()
    age = time.time() - cache.stat().st_mtime if cache.exists() else None
    if age is not None and age < METADATA_MAX_AGE_S:
        return tuple(parse_metadata(cache.read_text())), f"Maven Central (cached {age / 3600:.1f} h ago)"
    try:
        xml = _fetch_metadata()
        versions = parse_metadata(xml)
        if versions:
            cache.write_text(xml)
            return tuple(versions), "Maven Central (fetched now)"
    except OSError:
        pass
    if age is not None:
        return tuple(parse_metadata(cache.read_text())), \
            f"a cached Maven Central list {age / 86400:.1f} days old (Maven Central did not answer)"
    return pinned, "the pinned table in clusters/versions.py (Maven Central did not answer)"


def versions_source() -> str:
    return served_versions()[1]


def line_patches(row: ReleaseLine) -> list[str]:
    """The served patches of one line, oldest first."""
    served = [v for v in served_versions()[0] if ".".join(v.split(".")[:2]) == row.line]
    return sorted(served, key=version_key)


# ---- resolution ----------------------------------------------------------------------

def known_versions_text() -> str:
    parts = []
    for row in LINES:
        patches = line_patches(row)
        parts.append(f"{row.line} ({', '.join(patches) if patches else 'none served'})")
    return "; ".join(parts)


def _unknown(name: str, problem: str) -> SpecError:
    return SpecError("version", problem,
                     f"use a line or an exact version: {known_versions_text()} "
                     f"[versions from {versions_source()}]; a new line needs a row in "
                     "clusters/versions.py")


@lru_cache(maxsize=256)
def resolve_version(name: str) -> KafkaVersion:
    """'4' (newest line of a major), '4.1' (newest patch of a line) or '4.1.2' (exact)."""
    name = str(name).strip()
    parts = name.split(".")
    if not name or not all(p.isdigit() for p in parts) or len(parts) > 3:
        raise _unknown(name, f"unknown Kafka version {name!r}: not a version number")
    if len(parts) == 1:
        rows = [r for r in LINES if r.line.split(".")[0] == name and line_patches(r)]
        if not rows:
            raise _unknown(name, f"unknown Kafka version {name!r}: no {name}.x line is known")
        return resolve_version(rows[-1].line)
    row = LINE_BY_NAME.get(".".join(parts[:2]))
    if row is None:
        raise _unknown(name, f"unknown Kafka version {name!r}: its line {'.'.join(parts[:2])} has "
                             "no row in clusters/versions.py (the harness runs 3.6 and later)")
    patches = line_patches(row)
    if len(parts) == 2:
        if not patches:
            raise _unknown(name, f"unknown Kafka version {name!r}: Maven Central serves no {name}.x")
        return KafkaVersion(patches[-1], row)
    if name not in patches:
        raise _unknown(name, f"unknown Kafka version {name!r}: Maven Central does not serve it "
                             f"(served in {row.line}: {', '.join(patches) or 'none'})")
    return KafkaVersion(name, row)


def all_versions() -> list[KafkaVersion]:
    """The newest patch of every line (what `harness images build` builds by default)."""
    return [resolve_version(r.line) for r in LINES if line_patches(r)]


def default_versions() -> list[KafkaVersion]:
    """The images `setup.sh` builds ahead: the lines the built-in scenarios use."""
    return [resolve_version("3.9"), resolve_version(DEFAULT_VERSION)]
