"""Which JDK the Spark driver runs on.

Spark 4.3 runs on Java 17, 21 and 25, the 25s from 25.0.3 on (Spark deprecates
the earlier ones for a G1 data-corruption bug, SPARK-55852). A JDK 25 starts
from an AOT cache (JEP 483, 514, 515; spark_reports/class_cache.py): Spark's
classes loaded and linked ahead of time, and the method profiles of a training
run, so that the JIT compiles the hot methods from the start. Measured on the
benchmark histories (benchmarks/RESULTS.md), it verifies faster than JDK 17
with its class archive, so the driver runs on a JDK 25 when the machine has one.

The choice, first that applies:
1. HARNESS_SPARK_JAVA_HOME: the driver's JDK, named outright;
2. JAVA_HOME, when set: the user's choice, kept as it is;
3. the newest JDK 25 (25.0.3 or later) under /usr/lib/jvm;
4. `java` on PATH (Debian's JDK 17 here).

pyspark starts the driver JVM with $JAVA_HOME/bin/java, so prepare_env() sets
JAVA_HOME for this process when the choice is 3.
"""
from __future__ import annotations

import functools
import os
import re
import shutil
from dataclasses import dataclass
from pathlib import Path

JVM_DIRS = ("/usr/lib/jvm",)
# Spark 4.3's supported Java 25 releases; a later major is not supported by Spark.
MIN_25, NEXT_MAJOR = (25, 0, 3), 26


@dataclass(frozen=True)
class Jdk:
    home: str | None                 # None: `java` on PATH, its home unknown
    version: tuple[int, ...] | None  # from the JDK's `release` file
    chosen_by: str

    @property
    def java(self) -> str:
        return os.path.join(self.home, "bin", "java") if self.home else "java"

    @property
    def aot_cache(self) -> bool:
        """The JDK maps an AOT cache (JDK 25: JEP 514's -XX:AOTCacheOutput, JEP 515's
        method profiles); older JDKs map a dynamic CDS archive instead."""
        return self.version is not None and self.version >= (25,)

    def describe(self) -> str:
        v = ".".join(map(str, self.version)) if self.version else "version unknown"
        return f"{v} at {self.home or 'java on PATH'} ({self.chosen_by})"


def release_version(home: str | Path) -> tuple[int, ...] | None:
    """JAVA_VERSION from a JDK's `release` file, e.g. (25, 0, 3); None if unreadable."""
    try:
        text = (Path(home) / "release").read_text()
    except OSError:
        return None
    m = re.search(r'^JAVA_VERSION="([0-9][0-9.]*)', text, re.M)
    return tuple(int(p) for p in m.group(1).strip(".").split(".")) if m else None


def _home_of_path_java() -> str | None:
    java = shutil.which("java")
    if not java:
        return None
    home = Path(os.path.realpath(java)).parent.parent
    return str(home) if (home / "release").is_file() else None


def candidates(dirs=None) -> list[tuple[tuple[int, ...], str]]:
    """(version, home) of every JDK 25 under dirs (JVM_DIRS) that Spark supports,
    newest first."""
    found = {}
    for d in dirs or JVM_DIRS:
        try:
            entries = sorted(os.scandir(d), key=lambda e: e.name)
        except OSError:
            continue
        for e in entries:
            home = os.path.realpath(e.path)
            v = release_version(home) if os.path.isfile(os.path.join(home, "bin", "java")) else None
            if v is not None and MIN_25 <= v and v[0] < NEXT_MAJOR:
                found[home] = v
    return sorted(((v, h) for h, v in found.items()), reverse=True)


@functools.lru_cache(maxsize=1)
def driver_jdk() -> Jdk:
    for var in ("HARNESS_SPARK_JAVA_HOME", "JAVA_HOME"):
        home = os.environ.get(var)
        if home:
            return Jdk(home, release_version(home), var)
    found = candidates()
    if found:
        version, home = found[0]
        return Jdk(home, version, "newest JDK 25 in " + ", ".join(JVM_DIRS))
    home = _home_of_path_java()
    return Jdk(home, release_version(home) if home else None, "java on PATH")


def prepare_env() -> Jdk:
    """Point pyspark's launcher at the driver's JDK (it reads JAVA_HOME); the JDK."""
    jdk = driver_jdk()
    if jdk.home and jdk.chosen_by != "java on PATH":
        os.environ["JAVA_HOME"] = jdk.home
    return jdk
