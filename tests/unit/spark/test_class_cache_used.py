"""The driver JVM really maps Spark's classes from the archive setup wrote (a JVM
that cannot use an archive says nothing: QUIET), so this is checked from the
JVM's own class-loading log."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from spark_reports import class_cache

pytestmark = pytest.mark.spark

ROOT = Path(__file__).resolve().parents[3]


@pytest.mark.parametrize("history_rows, jit", [
    (None, "-XX:CompileThresholdScaling=3"), (1000, "-XX:TieredStopAtLevel=1")])
def test_a_spark_session_loads_its_classes_from_the_archive(tmp_path, history_rows, jit):
    """With either JIT setting (session.QUICK_JIT_MAX_ROWS), which the JVM really runs with."""
    if not class_cache.enabled() or not class_cache.archive_path().is_file():
        pytest.skip("no class archive: `python -m verifiers.class_archive` writes it "
                    "(scripts/setup.sh with HARNESS_SETUP_CLASS_ARCHIVE=1)")
    log = tmp_path / "classes-%p.log"
    # JDK_JAVA_OPTIONS reaches every JVM the launcher starts; %p keeps them apart
    env = {**os.environ, "JDK_JAVA_OPTIONS": f"-Xlog:class+load=info:file={log}"}
    code = ("from spark_reports.session import spark_session\n"
            f"s, _ = spark_session('local[1]', driver_memory='512m', history_rows={history_rows})\n"
            "assert s.range(3).count() == 3\n"
            "jvm = s.sparkContext._jvm\n"
            "print(list(jvm.java.lang.management.ManagementFactory.getRuntimeMXBean()"
            ".getInputArguments()))\n"
            "s.stop()\n")
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=env, check=True,
                         capture_output=True, text=True, timeout=300).stdout
    assert jit in out, out[-2000:]
    lines = [line for f in tmp_path.glob("classes-*.log") for line in f.read_text().splitlines()
             if "org.apache.spark.SparkContext " in line]
    # "shared objects file": the JDK 25 AOT cache; "(top)": JDK 17's dynamic archive
    assert lines and all("shared objects file" in line for line in lines), lines
