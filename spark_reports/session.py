"""The SparkSession the reconciler runs in.

Which one, first that applies (session_scope):
1. the session the caller gives (a suite's shared one), or the active one (tests);
2. `master` (--spark-master): a classic session on that cluster;
3. HARNESS_SPARK_REMOTE (--spark-remote sc://host:port): a Spark Connect session on a
   server the user runs. It reads the history where the run directory says, so the
   server must be able to read that path (docs/spark.md);
4. HARNESS_SPARK_MODE=server (the default): a session of its own on the local Spark
   Connect server (spark_reports/connect_server.py), started on first use and kept
   warm; when it cannot start, the terminal says why and 5. is used instead;
5. HARNESS_SPARK_MODE=local (--spark-mode local): a classic in-process session,
   `local[*]`, its driver JVM started for this verify and stopped after it.

Driver memory is fixed before the JVM starts, so it is set here; only aggregates and
samples come back to the driver, so a few GiB verify histories of 100 M records.
"""
from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager, suppress

from core.errors import HarnessError
from spark_reports import class_cache, connect_server, driver_jdk
from spark_reports.jvm_options import (  # noqa: F401 - QUICK_JIT_MAX_ROWS: its documented home
    DEFAULT_DRIVER_MEMORY,
    DEFAULT_SHUFFLE_PARTITIONS,
    QUICK_JIT_MAX_ROWS,
    c1_server,
    local_java_options,
    machine_cores,
)

MODES = ("server", "local")
# The options each Spark Connect session sets for itself (a classic local session has
# them from spark_session's builder; the server's static ones: connect_server.SERVER_CONF).
CONNECT_SESSION_CONF = {
    "spark.sql.session.timeZone": "UTC",
    "spark.sql.adaptive.enabled": "true",
    "spark.sql.shuffle.partitions": str(DEFAULT_SHUFFLE_PARTITIONS),
    "spark.sql.parquet.outputTimestampType": "TIMESTAMP_MICROS",
    # Spark Connect's own default, which an older harness's server turned off: each
    # analysed plan is kept, so a kind's frame, analysed once, is not planned again
    # when the explanation is built on it and fetched. Safe across the verifies that
    # reuse a session: every read carries its process's mark (tables.READ_MARK).
    "spark.connect.session.planCache.enabled": "true",
}


def spark_mode() -> str:
    """HARNESS_SPARK_MODE (--spark-mode): server (default) or local."""
    mode = os.environ.get("HARNESS_SPARK_MODE", "server").strip() or "server"
    if mode not in MODES:
        raise HarnessError(f"HARNESS_SPARK_MODE={mode!r}: expected one of {', '.join(MODES)} "
                           "(--spark-mode)")
    return mode


def spark_remote() -> str | None:
    """HARNESS_SPARK_REMOTE (--spark-remote): a Spark Connect URL, sc://host:port."""
    url = os.environ.get("HARNESS_SPARK_REMOTE", "").strip() or None
    if url is not None and not url.startswith("sc://"):
        raise HarnessError(f"HARNESS_SPARK_REMOTE={url!r}: expected a Spark Connect URL, "
                           "sc://host:port (--spark-remote)")
    return url


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

    # A classic session after a Connect one in this process (or its parent's: the
    # variable is inherited): while this is set, pyspark builds Connect sessions and columns.
    os.environ.pop("SPARK_CONNECT_MODE_ENABLED", None)
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
        java_options = local_java_options(history_rows, cds)
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
def session_scope(master: str | None = None, spark=None, *, about: str = "", **kw) -> Iterator:
    """A session for the body (the module's docstring says which), stopped when the body
    ends if it was made for it (spark_session's options for a classic one). `about`:
    what the body verifies (`harness spark status` shows it)."""
    if spark is not None:
        yield spark
        return
    from pyspark.sql import SparkSession
    active = SparkSession.getActiveSession()
    if active is not None:
        yield active
        return
    remote = spark_remote() if master is None else None
    if remote is not None:
        with _connect_session(remote, remote) as session:
            yield session
        return
    if master is None and spark_mode() == "server" and _server_serves(kw.get("history_rows")):
        try:
            _connect_client_installed()
            server = connect_server.ensure_server()
        except connect_server.ServerUnavailable as e:
            print(f"harness: {e}; verifying in a Spark session of this process instead "
                  "(--spark-mode local)", flush=True)
        else:
            with (connect_server.lease(about), connect_server.session_slot(server) as slot,
                  _connect_session(server.url, None, server, slot) as session):
                yield session
            return
    session, owned = spark_session(master, **kw)
    try:
        yield session
    finally:
        if owned:
            session.stop()


def _server_serves(history_rows: int | None) -> bool:
    """Whether the local server verifies a history of that many rows. A server that
    compiles with C1 only (jvm_options.c1_server) does not verify one above
    QUICK_JIT_MAX_ROWS: its code would be 1.5x slower there (235 s against 150 s at
    10 M records), so such a history gets a JVM of its own, with both compilers."""
    if history_rows is None or history_rows <= QUICK_JIT_MAX_ROWS or not c1_server():
        return True
    print(f"harness: {history_rows:,} rows on a {machine_cores()}-core machine: verifying in "
          "a Spark session of this process, whose JIT compiles for a long verify, not on "
          "the local server (which compiles for short ones)", flush=True)
    return False


def _connect_client_installed() -> None:
    """pyspark's Spark Connect client needs pyspark[connect]'s extras (grpcio, ...)."""
    from pyspark.sql.connect.utils import check_dependencies
    try:
        check_dependencies()
    except ImportError as e:
        raise connect_server.ServerUnavailable(
            f"the Spark Connect client is not installed ({e}; pip install 'pyspark[connect]')") from e


@contextmanager
def _connect_session(url: str, shown: str | None, server=None, slot=None) -> Iterator:
    """A Spark Connect session of its own on `url` (shown: the URL as the user gave it;
    server: the local server's state), released when the body ends; with a `slot`
    (connect_server.SessionSlot, the local server's), the slot's session, kept for the
    next verify unless the body failed. A local server that dies meanwhile ends the
    body with a HarnessError (exit 2) that says so."""
    where = shown or server.display_url
    try:
        session = _open(url, where, slot)
    except HarnessError:
        if slot is None or "SESSION_CLOSED" not in str(sys.exc_info()[1]):
            raise
        slot.retire()            # the server closed the slot's session (it was idle)
        session = _open(url, where, slot)
    if server is None:
        # a remote server may be busy or restarting: pyspark's own patience from here on
        session.client.set_retry_policies([_default_policy()])
    finished = False
    try:
        if slot is not None:
            # a reused session: from the server's defaults, whatever the last one set
            session.sql("RESET")
        for key, value in CONNECT_SESSION_CONF.items():
            session.conf.set(key, value)
        yield session
        finished = True
    except Exception as e:
        if server is not None and not server.alive():
            raise HarnessError(
                f"the local Spark Connect server ({where}, JVM pid {server.jvm_pid}) stopped "
                f"during the verify, which could not finish (the server's log: {server.log}); "
                "verify again, a new server starts") from e
        raise
    finally:
        # a server that is gone has nothing to interrupt or release
        if not finished:
            # an error or a Ctrl-C: the server would go on with this session's queries
            _quick_retries(session)
            with suppress(Exception):
                session.interruptAll()
            if slot is not None:     # not left to the next verify: released, and a new one
                session.release_session_on_close = True
                slot.retire()
        with suppress(Exception):
            session.stop()


def _open(url: str, where: str, slot) -> object:
    """A session on url (the slot's, when there is one), after a first round trip."""
    from pyspark.sql import SparkSession
    try:
        session = SparkSession.builder.remote(
            url if slot is None else f"{url};session_id={slot.session_id}").create()
    except Exception as e:  # noqa: BLE001 - any failure to connect is said the same way
        raise HarnessError(f"Spark Connect server {where}: cannot open a session: "
                           f"{_first_line(e)}") from e
    if slot is not None:
        # stop() then closes the connection and leaves the session for the next verify
        session.release_session_on_close = False
    # the first round trip with few retries: a URL nobody answers at is said within
    # seconds, not after pyspark's ten minutes of retrying
    _quick_retries(session)
    try:
        session.version  # noqa: B018 - a round trip to the server
    except Exception as e:  # noqa: BLE001 - as above
        with suppress(Exception):
            session.stop()       # (no longer this process's active session)
        raise HarnessError(f"Spark Connect server {where}: cannot reach it: {_first_line(e)}") from e
    return session


def _quick_retries(session) -> None:
    """A local server that does not answer has died: give up within a few seconds, not
    the ten minutes pyspark's default retries allow a remote one."""
    from pyspark.sql.connect.client.retries import DefaultPolicy
    session.client.set_retry_policies([DefaultPolicy(max_retries=3, initial_backoff=200,
                                                     max_backoff=1000)])


def _default_policy():
    from pyspark.sql.connect.client.retries import DefaultPolicy
    return DefaultPolicy()


def _first_line(e: BaseException) -> str:
    text = str(e).strip()
    return f"{type(e).__name__}: {text.splitlines()[0] if text else ''}"


def spark_identity(spark) -> dict:
    """The Spark version, master and driver JVM that verified a history (summary's
    config.spark). Through SQL and the session's conf, not sparkContext: a Spark
    Connect session has no sparkContext and no JVM in this process."""
    java = spark.sql("SELECT java_method('java.lang.System', 'getProperty', 'java.version') AS v"
                     ).collect()[0]["v"]
    return {"version": spark.version, "master": spark.conf.get("spark.master"),
            "driver_java": java}
