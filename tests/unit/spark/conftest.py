"""One local SparkSession for every Spark test of this folder (per xdist worker)."""
from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

# the synthetic history generator lives with the benchmarks (benchmarks/synthetic.py)
sys.path.insert(0, str(Path(__file__).resolve().parents[3] / "benchmarks"))


@pytest.fixture(scope="session")
def spark():
    pytest.importorskip("pyspark")
    from pyspark.sql import SparkSession

    from spark_reports import class_cache, driver_jdk

    driver_jdk.prepare_env()      # the JDK the archive below was written by
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    builder = (SparkSession.builder.master("local[2]").appName("harness-unit-tests")
               .config("spark.sql.shuffle.partitions", "4")
               .config("spark.default.parallelism", "2")
               .config("spark.ui.enabled", "false")
               .config("spark.ui.showConsoleProgress", "false")
               .config("spark.driver.memory", "1g")
               .config("spark.driver.host", "127.0.0.1")
               .config("spark.driver.bindAddress", "127.0.0.1")
               .config("spark.sql.session.timeZone", "UTC")
               # Tiny inputs: compiling generated code and re-planning cost more than they save.
               .config("spark.sql.codegen.wholeStage", "false")
               .config("spark.sql.adaptive.enabled", "false"))
    # the driver's class archive, when setup wrote one (spark_reports/class_cache.py)
    cds = class_cache.java_options()
    if cds:
        builder = builder.config("spark.driver.extraJavaOptions", cds)
    session = builder.getOrCreate()
    session.sparkContext.setLogLevel("ERROR")
    yield session
    session.stop()
