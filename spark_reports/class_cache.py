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

`python -m spark_reports.class_cache` (run by scripts/setup.sh) writes it by
verifying a small history with anomalies of most kinds (_training_history), so
that the training run loads what a real verify loads. Spark sessions then use it when it exists. A
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
import sys
import tempfile
from pathlib import Path

from spark_reports.driver_jdk import driver_jdk

# The archive is an optimisation: a JVM that cannot map it says so on stdout, which
# would land in the user's terminal for nothing.
QUIET = "-Xlog:cds=off -Xlog:cds+dynamic=off"
QUIET_AOT = "-Xlog:aot=off -Xlog:cds=off"


def _spark_home() -> str:
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


@functools.lru_cache(maxsize=1)     # `java -version` is a process: once per process
def _identity() -> dict:
    import pyspark
    return {"spark_home": _spark_home(), "pyspark": pyspark.__version__, "java": _java()}


def archive_path() -> Path:
    """Where this Spark and this JDK's archive lives (whether or not it exists)."""
    ident = _identity()
    key = hashlib.sha256("\n".join(ident.values()).encode()).hexdigest()[:16]
    from clusters.images import cache_dir
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


def build(force: bool = False) -> Path | None:
    """Write the archive unless it exists; its path, or None when turned off."""
    if not enabled():
        return None
    path = archive_path()
    if path.is_file() and not force:
        return path
    path.parent.mkdir(parents=True, exist_ok=True)
    _prune(path.parent)
    tmp = path.with_name(f"{path.name}.{os.getpid()}.tmp")
    try:
        _dump(tmp)
        if not tmp.is_file():
            raise RuntimeError(f"the JVM wrote no class archive at {tmp}")
        Path(f"{path}.json").write_text(json.dumps(_identity(), indent=1) + "\n")
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)
    return path


def _training_history(run_dir: str) -> None:
    """A few hundred records with an anomaly of most kinds, a fault and a leader
    change, so that the training run loads the classes a real verify loads."""
    import json

    from core.history import HistoryWriter, record_id

    t0 = 1_700_000_000_000_000
    w = {t: HistoryWriter(run_dir, t, "training", flush_rows=1 << 30, flush_seconds=1e9)
         for t in ("produced", "consumed", "commits", "events")}
    for seq in range(300):
        rid, ts, off = record_id("p0", seq), t0 + seq * 10_000, seq + (seq >= 150)
        w["produced"].append({"producer": "p0", "seq": seq, "record_id": rid, "topic": "t",
                              "partition": 0, "offset": off, "status": "acked",
                              "send_ts_us": ts, "ack_ts_us": ts + 2_000})
        for phase, poll in (("run", (seq, 1)), ("drain", (seq, None))):
            if seq % 97 == 5 or (phase == "run" and seq == 200):
                continue        # lost, then skipped by the run consumer
            w["consumed"].append({"consumer": "c0" if phase == "run" else "drain",
                                  "group_id": "g0" if phase == "run" else None,
                                  "phase": phase, "topic": "t", "partition": 0,
                                  "offset": off, "record_id": rid, "isolation": "read_committed",
                                  "recv_ts_us": ts + 5_000, "poll_seq": poll[0],
                                  "assignment": poll[1]})
    w["consumed"].append({"consumer": "c0", "group_id": "g0", "phase": "run", "topic": "t",
                          "partition": 0, "offset": 150, "record_id": "ghost-0",
                          "isolation": "read_committed", "recv_ts_us": t0, "poll_seq": 300,
                          "assignment": 1})
    w["commits"].append({"consumer": "c0", "group_id": "g0", "topic": "t", "partition": 0,
                         "offset": 301, "ok": True, "ts_us": t0 + 3_100_000})
    for kind, ts in (("fault", t0 + 1_000_000), ("heal", t0 + 2_000_000)):
        w["events"].append({"ts_us": ts, "kind": kind, "name": "pause", "target": "kafka-1",
                            "detail": json.dumps({"fault_id": "f0"})})
    w["events"].append({"ts_us": t0 + 1_500_000, "kind": "observe", "name": "leader",
                        "target": "kafka-2",
                        "detail": json.dumps({"topic": "t", "partition": 0, "leader": 2})})
    for writer in w.values():
        writer.close()


def _dump(tmp: Path) -> None:
    """Verify a small history in a JVM that writes its classes to tmp when it exits,
    and wait for that exit (the archive is complete only then)."""
    from pyspark import SparkContext

    from spark_reports.session import spark_session
    from verifiers.verify import verify_run

    with tempfile.TemporaryDirectory(prefix="harness-cds-") as run_dir:
        _training_history(run_dir)
        spark, _ = spark_session(dump_classes_to=tmp)
        try:
            verify_run(run_dir, spark=spark)
        finally:
            spark.stop()
            proc = SparkContext._gateway.proc if SparkContext._gateway else None
            if proc is not None:
                proc.stdin.close()      # the JVM exits when its stdin closes
                proc.wait(timeout=600)


def main(argv: list[str] | None = None) -> int:
    import argparse
    ap = argparse.ArgumentParser(prog="python -m spark_reports.class_cache",
                                 description="write the Spark driver's class archive")
    ap.add_argument("--force", action="store_true", help="rewrite it even if it exists")
    args = ap.parse_args(argv)
    if not enabled():
        print("class archive: turned off (HARNESS_SPARK_CDS=0)")
        return 0
    existed = archive_path().is_file()
    path = build(force=args.force)
    print(f"class archive: {path} ({'kept' if existed and not args.force else 'written'})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
