"""Where the pipeline writes the views it reads back: report/_views/<name>/.

Measured at 10 M records, writing the per-record view and reading it back took
23 s where persisting it in Spark's cache (MEMORY_AND_DISK) took 99 s
(families/records/views.py).
"""
from __future__ import annotations

import sys
import time

from pyspark.sql import DataFrame, Observation
from pyspark.sql import types as T

from spark_reports.storage import RunLocation
from spark_reports.tables import read_parquet


class Scratch:
    """Where the views are written: report/_views/<name>/, removed by `remove`."""

    def __init__(self, spark, loc: RunLocation):
        self.spark, self.loc = spark, loc

    def materialize(self, name: str, df: DataFrame, observe: dict | None = None
                    ) -> tuple[DataFrame, dict]:
        """Write df, read it back; `observe` (name -> aggregate Column over df's
        columns) is computed during the write itself."""
        path = self.loc.spark_path("report", "_views", name)
        obs = None
        if observe:
            obs = Observation(name)
            df = df.observe(obs, *[c.alias(k) for k, c in observe.items()])
        # Scratch is read back once or twice and then removed: Parquet's dictionary
        # encoding (tried on every column, then dropped for near-unique ones) cost
        # 8 of 53 CPU-s writing the 10 M-row records view; LZ4 reads back faster
        # than the default Snappy (benchmarks/RESULTS.md).
        (df.write.mode("overwrite").option("parquet.enable.dictionary", "false")
         .option("compression", "lz4_raw").parquet(path))
        # read back with the schema it was written with (as a file source reads it,
        # nullable), so no footer is read to infer it
        schema = T.StructType([T.StructField(f.name, f.dataType, True) for f in df.schema])
        return read_parquet(self.spark, schema, path), (dict(obs.get) if obs else {})

    def remove(self, within_s: float = 30.0) -> None:
        """Remove the views. After an interrupt, a cancelled write's tasks can still be
        deleting their _temporary files while the directory is walked (seen in CI: a
        Ctrl-C in verify failed on a vanished '.part-….crc'): retried until they stop.
        Raised only when an error is not already on its way: a leftover scratch
        directory must not hide why the pipeline stopped."""
        stopping_on_error = sys.exc_info()[0] is not None    # called from a `finally`
        deadline = time.monotonic() + within_s
        while True:
            try:
                if self.loc.exists("report", "_views"):
                    self.loc.fs.delete_dir(self.loc.path("report", "_views"))
                return
            except FileNotFoundError:
                if time.monotonic() < deadline:
                    time.sleep(0.2)
                elif stopping_on_error:
                    return
                else:
                    raise
