"""One Spark session for every Spark test of this folder (per xdist worker): by default
a session of its own on the warm local Spark Connect server, the one `harness verify`
uses (spark_reports/connect_server.py; its JVM is started once, not per worker or per
CI job); with HARNESS_SPARK_MODE=local, a classic local session in this process."""
from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

# the synthetic history generator lives with the benchmarks (benchmarks/synthetic.py)
sys.path.insert(0, str(Path(__file__).resolve().parents[3] / "benchmarks"))

# Tiny inputs: compiling generated code and re-planning cost more than they save.
TEST_CONF = {"spark.sql.shuffle.partitions": "4",
             "spark.sql.codegen.wholeStage": "false",
             "spark.sql.adaptive.enabled": "false"}


@pytest.fixture(scope="session")
def spark():
    pytest.importorskip("pyspark")
    from spark_reports.session import session_scope, spark_mode
    if spark_mode() == "local":
        session = _classic_session()
        yield session
        session.stop()
        return
    with session_scope(None, about=f"unit tests (pytest pid {os.getpid()})") as session:
        for key, value in TEST_CONF.items():
            session.conf.set(key, value)
        yield session


def _classic_session():
    from pyspark.sql import SparkSession

    from spark_reports import class_cache, driver_jdk

    driver_jdk.prepare_env()      # the JDK the archive below was written by
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    builder = (SparkSession.builder.master("local[2]").appName("harness-unit-tests")
               .config("spark.default.parallelism", "2")
               .config("spark.ui.enabled", "false")
               .config("spark.ui.showConsoleProgress", "false")
               .config("spark.driver.memory", "1g")
               .config("spark.driver.host", "127.0.0.1")
               .config("spark.driver.bindAddress", "127.0.0.1")
               .config("spark.sql.session.timeZone", "UTC"))
    for key, value in TEST_CONF.items():
        builder = builder.config(key, value)
    # the driver's class archive, when setup wrote one (spark_reports/class_cache.py)
    cds = class_cache.java_options()
    if cds:
        builder = builder.config("spark.driver.extraJavaOptions", cds)
    session = builder.getOrCreate()
    session.sparkContext.setLogLevel("ERROR")
    return session
