"""The SparkSession the reconciler runs in.

`local[*]` by default, any cluster with `master`. Driver memory is fixed before
the JVM starts, so it is set here; only aggregates and samples come back to
the driver, so a few GiB verify histories of 100 M records.
"""
from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager

from spark_reports import class_cache, driver_jdk

DEFAULT_DRIVER_MEMORY = os.environ.get("HARNESS_SPARK_DRIVER_MEMORY", "4g")
DEFAULT_SHUFFLE_PARTITIONS = int(os.environ.get("HARNESS_SPARK_SHUFFLE_PARTITIONS", "16"))
# A JVM started to verify one history of at most this many rows (produced + consumed:
# a run of about 1 M records) compiles with C1 only. Such a verify lasts seconds, and
# on 2 cores the C2 compiler's threads take CPU the work needs before its code pays
# back: a fresh `harness verify` of a real 100 000-record run took 13.8 s against
# 19.7 s, on JDK 25 and JDK 17 alike. A longer-lived JVM keeps both compilers: at
# 10 M records C1 only took 235 s against 150 s, and in a suite's warm session C1's
# code verified a 1 M-record run in 1.4-1.8x the time (benchmarks/RESULTS.md).
QUICK_JIT_MAX_ROWS = 3_000_000


def spark_session(master: str | None = None, *, app_name: str = "harness-verify",
                  driver_memory: str = DEFAULT_DRIVER_MEMORY,
                  shuffle_partitions: int = DEFAULT_SHUFFLE_PARTITIONS,
                  extra_conf: dict[str, str] | None = None, dump_classes_to=None,
                  history_rows: int | None = None):
    """Return the active session if one exists (tests share one), else start one.
    The driver JVM runs on spark_reports.driver_jdk's JDK and maps its classes from
    spark_reports.class_cache's archive when there is one; with dump_classes_to it
    writes such an archive there on exit. history_rows: the session verifies one
    history of that many rows and stops (QUICK_JIT_MAX_ROWS)."""
    # pyspark's session: only when a session is made (the JVM is what costs)
    from pyspark.sql import SparkSession


    active = SparkSession.getActiveSession()
    if active is not None:
        return active, False
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    local = master is None or master.startswith("local")
    if local:
        # Bind to loopback only: a local run must not open ports on other interfaces.
        os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    b = (SparkSession.builder.appName(app_name)
         .master(master or "local[*]")
         .config("spark.driver.memory", driver_memory)
         .config("spark.sql.shuffle.partitions", str(shuffle_partitions))
         .config("spark.sql.adaptive.enabled", "true")
         .config("spark.ui.enabled", "false")
         .config("spark.ui.showConsoleProgress", "false")
         .config("spark.sql.session.timeZone", "UTC")
         # A verify generates ~115 classes; Spark's default cache of 100 made each verify
         # of a suite's shared session compile ~84 again; with room, ~6 (RESULTS.md).
         .config("spark.sql.codegen.cache.maxEntries", "1000")
         # Anomaly Parquet is read by pyarrow and DuckDB too: plain timestamps, no INT96.
         .config("spark.sql.parquet.outputTimestampType", "TIMESTAMP_MICROS"))
    driver_jdk.prepare_env()
    cds = (class_cache.dump_options(dump_classes_to) if dump_classes_to
           else class_cache.java_options())
    java_options = cds
    if local:
        b = b.config("spark.driver.host", "127.0.0.1").config("spark.driver.bindAddress", "127.0.0.1")
        java_options = _local_java_options(history_rows, cds)
        # Shuffle files stay on this machine, so compressing them only costs CPU:
        # 8 of 38 CPU-s in the map stage of the 10 M-record records view.
        b = b.config("spark.shuffle.compress", "false").config("spark.shuffle.spill.compress", "false")
    if java_options.strip():
        b = b.config("spark.driver.extraJavaOptions", java_options.strip())
    for k, v in (extra_conf or {}).items():
        b = b.config(k, v)
    spark = b.getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    return spark, True


@contextmanager
def session_scope(master: str | None = None, spark=None, **kw) -> Iterator:
    """A session for the body: `spark` when given (a suite's shared one), else the
    active one, else a new one, stopped when the body ends (spark_session's options)."""
    if spark is not None:
        yield spark
        return
    session, owned = spark_session(master, **kw)
    try:
        yield session
    finally:
        if owned:
            session.stop()


def _local_java_options(history_rows: int | None, cds: str) -> str:
    """The driver JVM's options for a local session: GC, JIT, class archive."""
    # Throughput GC for a batch job: measured 10-15 % faster than G1 on 20 M-row
    # shuffles and aggregations on this 2-core machine.
    # -DontCompileHugeMethods: the JIT compiles generated methods beyond 8000 bytes
    # too; else they run interpreted (a metrics scan with one expression per fault
    # took 140 s at 10 M records, 21 s with this flag).
    # CompileThresholdScaling=3: methods are compiled after 3x the default
    # invocations, so the JIT compiles fewer lukewarm ones (Spark's planning and
    # each query's generated code): JIT time 45-47 s against 66 s at 10 M
    # records, process CPU 149-159 s against 169-183 s (benchmarks/RESULTS.md).
    # Up to QUICK_JIT_MAX_ROWS, C1 only instead (see there).
    quick = history_rows is not None and history_rows <= QUICK_JIT_MAX_ROWS
    jit = "-XX:TieredStopAtLevel=1" if quick else "-XX:CompileThresholdScaling=3"
    return f"-XX:+UseParallelGC -XX:-DontCompileHugeMethods {jit} {cds}"
