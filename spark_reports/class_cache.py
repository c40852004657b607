"""A ready-made image of the classes the Spark driver JVM loads.

A verify starts a JVM that loads some 20 000 classes (Spark, Hadoop, Parquet, Scala)
from jars, parsing and verifying each. The JDK can map them ready-made from a file
written once, by a training run:
- on JDK 25 (spark_reports/driver_jdk.py), an AOT cache (JEP 483, 514, 515:
  -XX:AOTCacheOutput on the training run, -XX:AOTCache after): the classes loaded
  and linked, plus the training run's method profiles, which let the JIT compile
  the hot methods from the start;
- on older JDKs, a dynamic CDS archive (-XX:ArchiveClassesAtExit, then
  -XX:SharedArchiveFile): the classes only. Measured on the 1 M-record benchmark
  history, JDK 17, three pairs of runs: 154-170 CPU-s against 171-179; wall 82-84 s
  against 92-94 s in two pairs, 105 against 102 s in one with CPU steal.

`python -m verifiers.class_archive` (scripts/setup.sh with
HARNESS_SETUP_CLASS_ARCHIVE=1 runs it; not by default, issue 37) writes it by
verifying a small history with anomalies of most kinds, so that the training run
loads what a real verify loads. Spark sessions then use it when it exists. A
file the JVM cannot use (another JDK, another Spark, moved jars) is ignored by the
JVM itself; the file name is keyed on all three so that never happens by accident.
HARNESS_SPARK_CDS=0 turns it off; HARNESS_CACHE moves it, with the image build
cache (default ~/.cache/kafka-harness).
"""
from __future__ import annotations

import functools
import hashlib
import json
import os
import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path

from clusters.cache import cache_dir
from spark_reports.driver_jdk import driver_jdk

# The archive is an optimisation: a JVM that cannot map it says so on stdout, which
# would land in the user's terminal for nothing.
QUIET = "-Xlog:cds=off -Xlog:cds+dynamic=off"
QUIET_AOT = "-Xlog:aot=off -Xlog:cds=off"


def _spark_home() -> str:
    # pyspark: `harness doctor` reads the archive's path without Spark otherwise loaded
    import pyspark
    return os.path.realpath(os.path.dirname(pyspark.__file__))


def _java() -> str:
    java = driver_jdk().java
    try:
        out = subprocess.run([java, "-version"], capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired):
        return "unknown"
    # not the "Picked up JDK_JAVA_OPTIONS: …" notes: options do not change the JDK
    version = [line for line in out.stderr.splitlines() if "Picked up" not in line]
    return " ".join([os.path.realpath(shutil.which(java) or java), *version])


def _jars_stamp(home: str) -> str:
    """When Spark's jars were installed: a JVM maps an archive only over the very jar
    files it was made from (it checks their times), so a .venv made again at the same
    path needs a new archive, not the old one kept and silently refused."""
    try:
        return str(os.stat(os.path.join(home, "jars")).st_mtime_ns)
    except OSError:
        return ""


@functools.lru_cache(maxsize=1)     # `java -version` is a process: once per process
def _identity() -> dict:
    # pyspark: as above
    import pyspark
    home = _spark_home()
    return {"spark_home": home, "pyspark": pyspark.__version__, "java": _java(),
            "jars": _jars_stamp(home)}


def archive_path() -> Path:
    """Where this Spark and this JDK's archive lives (whether or not it exists)."""
    ident = _identity()
    key = hashlib.sha256("\n".join(ident.values()).encode()).hexdigest()[:16]
    suffix = ".aot" if driver_jdk().aot_cache else ".jsa"
    return cache_dir() / f"spark-driver-{ident['pyspark']}-{key}{suffix}"


def _prune(cache: Path) -> None:
    """Remove the archives of Spark installations that are gone (each is ~190 MB; a
    checkout's .venv has its own)."""
    for about in cache.glob("spark-driver-*.json"):
        try:
            home = json.loads(about.read_text()).get("spark_home")
        except (OSError, ValueError):
            continue
        if home and not os.path.isdir(home):
            Path(str(about)[:-len(".json")]).unlink(missing_ok=True)
            about.unlink(missing_ok=True)


def enabled() -> bool:
    return os.environ.get("HARNESS_SPARK_CDS", "1") != "0"


def java_options() -> str:
    """The driver JVM's options to use the archive ("" without one)."""
    if not enabled():
        return ""
    path = archive_path()
    if not path.is_file():
        return ""
    if driver_jdk().aot_cache:
        return f"-XX:AOTCache={path} {QUIET_AOT}"
    return f"-XX:SharedArchiveFile={path} {QUIET}"


def dump_options(to: Path) -> str:
    """The training run's options: write the archive to `to` when the JVM exits."""
    if driver_jdk().aot_cache:
        return f"-XX:AOTCacheOutput={to} {QUIET_AOT}"
    return f"-XX:ArchiveClassesAtExit={to} {QUIET}"


def build(force: bool = False, dump: Callable[[Path], None] | None = None) -> Path | None:
    """Write the archive unless it exists; its path, or None when turned off. dump(tmp):
    a training run whose JVM writes the archive to tmp as it exits
    (verifiers/class_archive.py verifies a small history)."""
    if not enabled():
        return None
    path = archive_path()
    if path.is_file() and not force:
        return path
    path.parent.mkdir(parents=True, exist_ok=True)
    _prune(path.parent)
    tmp = path.with_name(f"{path.name}.{os.getpid()}.tmp")
    try:
        dump(tmp)
        if not tmp.is_file():
            raise RuntimeError(f"the JVM wrote no class archive at {tmp}")
        Path(f"{path}.json").write_text(json.dumps(_identity(), indent=1) + "\n")
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)
    return path
