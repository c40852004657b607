"""Where the pipeline writes the views it reads back: report/_views/<name>/.

Measured at 10 M records, writing the per-record view and reading it back took
23 s where persisting it in Spark's cache (MEMORY_AND_DISK) took 99 s
(families/records/views.py).
"""
from __future__ import annotations

from pyspark.sql import DataFrame, Observation
from pyspark.sql import types as T

from spark_reports.storage import RunLocation


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
        return self.spark.read.schema(schema).parquet(path), (dict(obs.get) if obs else {})

    def remove(self) -> None:
        if self.loc.exists("report", "_views"):
            self.loc.fs.delete_dir(self.loc.path("report", "_views"))
