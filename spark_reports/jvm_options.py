"""The Spark driver JVM's options: memory, GC and JIT (spark_reports.session for an
in-process driver, spark_reports.connect_server for the warm server's)."""
from __future__ import annotations

import os

from spark_reports import class_cache

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


def local_java_options(history_rows: int | None, cds: str) -> str:
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


def server_java_options() -> str:
    """The local Connect server's JVM options: a long-lived JVM keeps both JIT
    compilers (QUICK_JIT_MAX_ROWS)."""
    return local_java_options(None, class_cache.java_options())
