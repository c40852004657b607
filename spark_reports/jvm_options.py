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


def machine_cores() -> int:
    """The cores this process may run on."""
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


# On this many cores or fewer, the local Connect server compiles with C1 only. Its C2
# thread took one of the two cores from the first verify, and went on compiling in
# every later one (each Connect session's generated classes are its own): measured on
# a 100 000-record history, 2 cores, alternating (benchmarks/RESULTS.md, issue 37),
# the first verify took 29-30 CPU-s of the server's JVM against 40-43, each later one
# 16-18 against 19-24. A history above QUICK_JIT_MAX_ROWS is then verified in a JVM of
# its own, with both compilers (spark_reports.session: server_serves).
C1_SERVER_MAX_CORES = 2


def c1_server() -> bool:
    return machine_cores() <= C1_SERVER_MAX_CORES


def server_java_options() -> str:
    """The local Connect server's JVM options: C1 only on a small machine
    (C1_SERVER_MAX_CORES), else both JIT compilers, as for a long verify."""
    return local_java_options(QUICK_JIT_MAX_ROWS if c1_server() else None,
                              class_cache.java_options())
