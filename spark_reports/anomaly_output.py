"""Writing each kind's rows, explained, and counting them (the spec's "Explaining an
anomaly").

Every row gets `leader_at_ack` (the broker the `observe` events name as its
partition's leader at the row's ack_ts_us; null if unknown) and `faults_at_ack`
(the fault_ids active then: injected at or before, healed at or after;
possibly empty). The row's ack_ts_us is its record's: for skipped and
poll_skip rows, the record the drain saw at that offset. Rows of kinds that
name no record (redelivered) or whose record has no ack_ts_us get a null
leader and an empty list; the summary's `anomalies_by_fault` counts them under
`unknown`, rows acked while no fault was active under `none`. A row acked
inside two faults counts for both.

Counts (totals and per fault) are taken from the written files with one rule
(COUNT_BY), so summary.json and the Parquet cannot disagree.
"""
from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from spark_reports.anomalies import COUNT_BY, KINDS
from spark_reports.storage import RunLocation
from spark_reports.timeline import Timeline

SAMPLE_ROWS = 20
# A kind with at most this many rows is fetched to the driver once (Arrow) and
# written there: one job instead of Spark's write and read-back jobs
# (benchmarks/RESULTS.md). A kind with more rows is written by Spark.
DRIVER_WRITE_MAX_ROWS = 100_000


@dataclass
class AnomalyResult:
    counts: dict[str, int]
    by_fault: dict[str, dict[str, int]]
    samples: dict[str, list[dict]]
    columns: dict[str, list[str]]
    # kind -> the largest groups of its rows by (partition, leader, faults): what the
    # report says in words and draws on the timeline
    explanations: dict[str, list[dict]]


class Explainer:
    """Adds leader_at_ack and faults_at_ack (module docstring) to a frame, from its
    topic, partition and ack_ts_us (null when it has none), for every frame of one run:
    the timeline's literal arrays are built once. Built for each of the twelve kinds,
    they took 2 800 of the 13 800 Py4J calls of a warm verify of a 90 000-record run
    (benchmarks/RESULTS.md)."""

    def __init__(self, tl: Timeline):
        leaders = [o for o in tl.observations if o.name == "leader" and o.partition is not None]
        self.observations = F.array(*[
            F.struct(F.lit(o.topic).cast("string").alias("t"), F.lit(o.partition).alias("p"),
                     F.lit(o.ts_us).alias("ts"), F.lit(_broker(o)).cast("string").alias("b"))
            for o in sorted(leaders, key=lambda o: o.ts_us)]) if leaders else None
        self.windows = F.array(*[
            F.struct(F.lit(f.fault_id).alias("id"), F.lit(f.start_us).alias("a"),
                     F.lit(f.end_us).alias("z")) for f in tl.faults]) if tl.faults else None

    def __call__(self, df: DataFrame) -> DataFrame:
        ack = F.col("ack_ts_us") if "ack_ts_us" in df.columns else F.lit(None).cast("long")
        leader = F.lit(None).cast("string")
        if self.observations is not None:
            before = F.filter(self.observations, lambda o: (o["p"] == F.col("partition")) & (
                o["t"].isNull() | (o["t"] == F.col("topic"))) & (o["ts"] <= ack))
            leader = F.when(F.size(before) > 0, F.element_at(before, -1)["b"])
        faults = F.array().cast("array<string>")
        if self.windows is not None:
            faults = F.coalesce(F.transform(F.filter(
                self.windows, lambda w: (w["a"] <= ack) & (ack <= w["z"])), lambda w: w["id"]),
                faults)
        return df.select("*", leader.alias("leader_at_ack"), faults.alias("faults_at_ack"))


def _broker(o) -> str | None:
    """The leader as the observer names it: the node (event target), else its id."""
    if o.target:
        return str(o.target)
    return None if o.leader in (None, -1) else str(o.leader)


def write_anomalies(spark, frames: dict[str, DataFrame], loc: RunLocation, tl: Timeline,
                    step=lambda name: None, empty: frozenset[str] = frozenset()) -> AnomalyResult:
    """Write every kind's rows, explained, under report/anomalies/<kind>/ and count
    them from what was written. `empty`: the kinds known to have no rows (their key
    sets were observed empty), written from their schema alone, with no Spark job."""
    out = AnomalyResult({}, defaultdict(dict), {}, {}, {})
    explain = Explainer(tl)
    for kind in KINDS:
        df = explain(frames[kind])
        rows = (_no_rows(df) if kind in empty else
                df.limit(DRIVER_WRITE_MAX_ROWS + 1).toArrow())
        if rows.num_rows <= DRIVER_WRITE_MAX_ROWS:
            rows = _write_from_driver(rows, loc, kind)
            head = rows
        else:
            path = loc.spark_path("report", "anomalies", kind)
            df.write.mode("overwrite").parquet(path)
            head = rows.slice(0, SAMPLE_ROWS)
            rows = _read_written(loc, kind)
        out.counts[kind] = count(rows, kind)
        for fault, n in count_by_fault(rows, kind).items():
            out.by_fault[fault][kind] = n
        out.explanations[kind] = explanations(rows, kind)
        out.columns[kind] = head.column_names
        out.samples[kind] = head.slice(0, SAMPLE_ROWS).to_pylist() if out.counts[kind] else []
        step(f"anomalies.{kind}")
    out.by_fault = dict(out.by_fault)
    return out


def _no_rows(df: DataFrame) -> pa.Table:
    """df's columns and no rows, typed as toArrow() types them, without running it."""
    from pyspark.sql.pandas.types import to_arrow_schema

    large = df.sparkSession.conf.get("spark.sql.execution.arrow.useLargeVarTypes") == "true"
    return to_arrow_schema(df.schema, error_on_duplicated_field_names_in_struct=True,
                           timezone="UTC", prefers_large_types=large).empty_table()


def count(rows: pa.Table, kind: str) -> int:
    """A kind's count by its rule (COUNT_BY) over its written rows."""
    how, keys = COUNT_BY[kind]
    if how == "rows" or rows.num_rows == 0:
        return rows.num_rows
    if how == "sum":
        return int(pc.sum(rows.column(keys[0])).as_py() or 0)
    return rows.select(list(keys)).group_by(list(keys)).aggregate([]).num_rows


def count_by_fault(rows: pa.Table, kind: str) -> dict[str, int]:
    """The kind's count per fault active at each row's ack ("none": no fault was
    active; "unknown": the row has no ack time)."""
    if rows.num_rows == 0:
        return {}
    faults = rows.column("faults_at_ack").combine_chunks()
    lengths = pc.list_value_length(faults).to_pylist()
    acked = (rows.column("ack_ts_us").is_valid().to_pylist() if "ack_ts_us" in rows.column_names
             else [False] * rows.num_rows)
    fault_rows = pa.table({"i": pc.list_parent_indices(faults),
                           "fault": pc.list_flatten(faults)})
    groups: dict[str, list[int]] = defaultdict(list)
    for i, f in zip(fault_rows["i"].to_pylist(), fault_rows["fault"].to_pylist(), strict=True):
        groups[f].append(i)
    for i, (n, a) in enumerate(zip(lengths, acked, strict=True)):
        if not n:
            groups["none" if a else "unknown"].append(i)
    return {f: count(rows.take(idx), kind) for f, idx in sorted(groups.items())}


EXPLAINED_GROUPS = 12


def explanations(rows: pa.Table, kind: str) -> list[dict]:
    """The kind's rows grouped by (topic, partition, leader_at_ack, faults_at_ack),
    each with its count (the kind's rule) and first and last ack time; the largest
    EXPLAINED_GROUPS groups."""
    if rows.num_rows == 0:
        return []
    acks = (rows.column("ack_ts_us").to_pylist() if "ack_ts_us" in rows.column_names
            else [None] * rows.num_rows)
    keys = zip(rows.column("topic").to_pylist(), rows.column("partition").to_pylist(),
               rows.column("leader_at_ack").to_pylist(),
               map(tuple, rows.column("faults_at_ack").to_pylist()), strict=True)
    groups: dict[tuple, list[int]] = defaultdict(list)
    for i, key in enumerate(keys):
        groups[key].append(i)
    out = []
    for (topic, part, leader, faults), idx in groups.items():
        times = [acks[i] for i in idx if acks[i] is not None]
        out.append({"topic": topic, "partition": part, "leader": leader, "faults": list(faults),
                    "count": count(rows.take(idx), kind),
                    "first_ack_us": min(times, default=None),
                    "last_ack_us": max(times, default=None)})
    out.sort(key=lambda g: (-g["count"], str(g["topic"]), g["partition"] or 0))
    return out[:EXPLAINED_GROUPS]


def _read_written(loc: RunLocation, kind: str) -> pa.Table:
    """The columns counting and explaining read, of what Spark wrote for a kind (only
    those: a kind may have many millions of rows)."""
    files = loc.list_parquet("report", "anomalies", kind)
    names = pq.read_schema(files[0], filesystem=loc.fs).names
    cols = [c for c in dict.fromkeys([*COUNT_BY[kind][1], "topic", "partition", "ack_ts_us",
                                      "leader_at_ack", "faults_at_ack"]) if c in names]
    return pa.concat_tables([pq.read_table(f, columns=cols, filesystem=loc.fs) for f in files])


def _write_from_driver(rows: pa.Table, loc: RunLocation, kind: str) -> pa.Table:
    """rows as report/anomalies/<kind>/part-00000.parquet, with the _SUCCESS marker
    Spark's writer leaves; strings as Spark writes them (not large)."""
    def plain(t: pa.DataType) -> pa.DataType:
        if pa.types.is_large_string(t):
            return pa.string()
        if pa.types.is_large_list(t):
            return pa.list_(plain(t.value_type))
        return t
    rows = rows.cast(pa.schema([f.with_type(plain(f.type)) for f in rows.schema]))
    d = loc.path("report", "anomalies", kind)
    if loc.exists("report", "anomalies", kind):
        loc.fs.delete_dir(d)
    loc.fs.create_dir(d, recursive=True)
    pq.write_table(rows, f"{d}/part-00000.parquet", filesystem=loc.fs)
    loc.write_bytes(b"", "report", "anomalies", kind, "_SUCCESS")
    return rows
