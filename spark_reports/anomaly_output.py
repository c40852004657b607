"""Writing each kind's rows, explained, and counting them (the spec's "Explaining an
anomaly").

Every row gets, from its topic, partition and ack time:
- `leader_at_ack`: the broker that acknowledged the record, as the producer itself
  knew it (its `acked_by`); null when the client could not tell;
- `elected_leader_at_ack`: the broker the observer's `leader` events name as the
  partition's leader then (the controller's view). Where the two differ, a deposed
  leader acknowledged the record;
- `faults_at_ack`: the fault_ids active then (injected at or before, healed at or
  after; possibly empty; never a fault whose inject failed);
- `fault_id`: the fault the row is charged to (core.timeline.Timeline.owner: active at
  the ack, or healed no more than 10 s before it, injected last), "none" if no fault
  qualifies. A deposed leader goes on acknowledging after the heal until it learns of
  the new leader: those records belong to the fault that deposed it.
The row's ack time is its record's: for skipped and poll_skip rows, the record the
drain saw at that offset. Rows that name no acknowledged record (redelivered) are
charged by the time the group first received the offset (`first_recv_us`); rows
with neither time get "none".

Counts (totals and per fault) are taken from the written files with one rule (each
kind's count_by, families/base.py), so summary.json and the Parquet cannot
disagree; per fault, each counted key (a record_id, an offset …) goes to one
fault_id, so a kind's counts over all fault_ids add up to its total.
"""
from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass
from functools import reduce

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
from pyspark.sql import DataFrame
from pyspark.sql import functions as F
from pyspark.sql import types as T
from pyspark.sql.pandas.types import to_arrow_schema

from core.timeline import AFTER_HEAL_US, Timeline
from families import KINDS
from families.base import Kind
from spark_reports.storage import RunLocation

SAMPLE_ROWS = 20
# A kind with at most this many rows is fetched to the driver once (Arrow) and
# written there: one job instead of Spark's write and read-back jobs
# (benchmarks/RESULTS.md). A kind with more rows is written by Spark.
DRIVER_WRITE_MAX_ROWS = 100_000
EXPLAIN_COLUMNS = ("leader_at_ack", "elected_leader_at_ack", "faults_at_ack", "fault_id")


@dataclass
class AnomalyResult:
    counts: dict[str, int]
    by_fault: dict[str, dict[str, int]]
    samples: dict[str, list[dict]]
    columns: dict[str, list[str]]
    # kind -> the largest groups of its rows by (partition, who acknowledged, who was
    # elected, fault): what the report says in words and draws on the timeline
    explanations: dict[str, list[dict]]


class Explainer:
    """Adds the explanation columns (module docstring) to a frame, for every frame of
    one run: the timeline's literal arrays are built once. Built for each of the twelve
    kinds, they took 2 800 of the 13 800 Py4J calls of a warm verify of a 90 000-record
    run (benchmarks/RESULTS.md)."""

    def __init__(self, tl: Timeline):
        leaders = [o for o in tl.observations if o.name == "leader" and o.partition is not None]
        self.observations = F.array(*[
            F.struct(F.lit(o.topic).cast("string").alias("t"), F.lit(o.partition).alias("p"),
                     F.lit(o.ts_us).alias("ts"), F.lit(_broker_id(o.leader)).cast("int").alias("b"))
            for o in sorted(leaders, key=lambda o: o.ts_us)]) if leaders else None
        coordinators = sorted((o for o in tl.observations if o.name == "share-coordinator"),
                              key=lambda o: o.ts_us)
        self.share_coordinators = F.array(*[
            F.struct(F.lit(o.detail.get("group_id")).cast("string").alias("g"),
                     F.lit(o.topic).cast("string").alias("t"), F.lit(o.partition).alias("p"),
                     F.lit(o.ts_us).alias("ts"),
                     F.lit(_broker_id(o.detail.get("coordinator"))).cast("int").alias("b"))
            for o in coordinators]) if coordinators else None
        # by injection time, so the last that qualifies is the one injected last; a
        # fault that was not injected was never active and owns nothing
        self.windows = F.array(*[
            F.struct(F.lit(f.fault_id).alias("id"), F.lit(f.start_us).alias("a"),
                     F.lit(f.end_us).alias("z"))
            for f in sorted(tl.injected, key=lambda f: f.start_us)]) if tl.injected else None

    def __call__(self, df: DataFrame, columns: list[str] | None = None) -> DataFrame:
        """df with the explanation columns; `columns`: df's, when known (on Spark
        Connect, asking a new frame for them is a round trip)."""
        columns = df.columns if columns is None else columns
        # the moment a row is about: its record's ack, or (a share delivery's rows)
        # the delivery, `explain_at_us`
        ack = (F.col("explain_at_us") if "explain_at_us" in columns
               else F.col("ack_ts_us") if "ack_ts_us" in columns else F.lit(None).cast("long"))
        seen = F.coalesce(ack, F.col("first_recv_us")) if "first_recv_us" in columns else ack
        acked_by = (F.col("acked_by") if "acked_by" in columns else F.lit(None)).cast("int")
        elected = F.lit(None).cast("int")
        if self.observations is not None:
            before = F.filter(self.observations, lambda o: (o["p"] == F.col("partition")) & (
                o["t"].isNull() | (o["t"] == F.col("topic"))) & (o["ts"] <= ack))
            elected = F.when(F.size(before) > 0, F.element_at(before, -1)["b"])
        faults, owner = F.array().cast("array<string>"), F.lit("none")
        if self.windows is not None:
            faults = F.coalesce(F.transform(F.filter(
                self.windows, lambda w: (w["a"] <= ack) & (ack <= w["z"])), lambda w: w["id"]),
                faults)
            owners = F.filter(self.windows, lambda w: (w["a"] <= seen)
                              & (seen <= w["z"] + AFTER_HEAL_US))
            owner = F.coalesce(F.when(F.size(owners) > 0, F.element_at(owners, -1)["id"]),
                               F.lit("none"))
        extra = []
        if self.share_coordinators is not None and "group_id" in columns:
            # a share group's rows: the broker persisting that share-partition's state then
            known = F.filter(self.share_coordinators, lambda o: (o["g"] == F.col("group_id")) & (
                o["t"] == F.col("topic")) & (o["p"] == F.col("partition")) & (o["ts"] <= ack))
            extra.append(F.when(F.size(known) > 0, F.element_at(known, -1)["b"])
                         .alias("share_coordinator_at_ack"))
        return df.select("*", acked_by.alias("leader_at_ack"), elected.alias("elected_leader_at_ack"),
                         faults.alias("faults_at_ack"), owner.alias("fault_id"), *extra)


def _broker_id(leader) -> int | None:
    """The leader id an observe event names (None: no leader, -1)."""
    try:
        b = int(leader)
    except (TypeError, ValueError):
        return None
    return b if b >= 0 else None


def write_anomalies(spark, frames: dict[str, DataFrame], loc: RunLocation, tl: Timeline,
                    kinds: tuple[Kind, ...] = KINDS, step=lambda name: None,
                    empty: frozenset[str] = frozenset(),
                    beside: Callable[[Callable], Callable] | None = None) -> AnomalyResult:
    """Write each kind's rows (`frames`: kind name -> its rows; `kinds`: the named
    families' kinds), explained, under report/anomalies/<kind>/ and count them from
    what was written. `empty`: the kinds known to have no rows (their key sets were
    observed empty), written from their schema alone, with no Spark job. `beside`:
    runs a kind's fetch in a thread of its own and returns its result's getter (the
    kinds are then fetched side by side; the caller bounds how many at once); None:
    one after another, here."""
    out = AnomalyResult({}, defaultdict(dict), {}, {}, {})
    explain = Explainer(tl)

    def fetch(kind: str) -> tuple[DataFrame, pa.Table]:
        df = explain(frames[kind])
        return df, df.limit(DRIVER_WRITE_MAX_ROWS + 1).toArrow()

    run = beside or (lambda fn: fn)     # one at a time: each fetched when its turn comes
    fetched = {k.name: run(lambda kind=k.name: fetch(kind)) for k in kinds if k.name not in empty}
    no_rows = _no_rows(explain, [frames[k.name] for k in kinds if k.name in empty])
    for k in kinds:
        kind = k.name
        df, rows = (None, no_rows.pop(0)) if kind in empty else fetched[kind]()
        if rows.num_rows <= DRIVER_WRITE_MAX_ROWS:
            rows = _write_from_driver(rows, loc, kind)
            head = rows
        else:
            path = loc.spark_path("report", "anomalies", kind)
            df.write.mode("overwrite").parquet(path)
            head = rows.slice(0, SAMPLE_ROWS)
            rows = _read_written(loc, k)
        out.counts[kind] = count(rows, k)
        for fault, n in count_by_fault(rows, k).items():
            out.by_fault[fault][kind] = n
        out.explanations[kind] = explanations(rows, k)
        out.columns[kind] = head.column_names
        out.samples[kind] = head.slice(0, SAMPLE_ROWS).to_pylist() if out.counts[kind] else []
        step(f"anomalies.{kind}")
    out.by_fault = dict(out.by_fault)
    return out


def _no_rows(explain: Explainer, frames: list[DataFrame]) -> list[pa.Table]:
    """Each frame's explained columns and no rows, typed as toArrow() types them,
    without a job and in one analysis by Spark. On Spark Connect each analysis is a
    round trip: one per empty kind took 0.25-0.6 s on a loaded machine (12 in a
    passing run; benchmarks/RESULTS.md, issue 37). The explanation is applied to an
    empty local relation with each frame's columns (their names, types and
    nullability are all it reads; each frame's schema is asked once, here), each
    becomes one struct column (a struct's fields keep their types and nullability),
    and the frames are joined side by side."""
    if not frames:
        return []
    spark = frames[0].sparkSession
    probes = []
    for i, raw in enumerate(frames):
        schema = raw.schema
        probe = explain(spark.createDataFrame([], schema), [f.name for f in schema])
        probes.append(probe.select(F.struct(F.col("*")).alias(f"frame_{i}")))
    side_by_side = reduce(lambda a, b: a.crossJoin(b), probes)
    large = spark.conf.get("spark.sql.execution.arrow.useLargeVarTypes") == "true"
    return [to_arrow_schema(T.StructType(list(f.dataType.fields)),
                            error_on_duplicated_field_names_in_struct=True,
                            timezone="UTC", prefers_large_types=large).empty_table()
            for f in side_by_side.schema.fields]


def count(rows: pa.Table, kind: Kind) -> int:
    """A kind's count by its rule (count_by) over its written rows."""
    how, keys = kind.count_by
    if how == "rows" or rows.num_rows == 0:
        return rows.num_rows
    if how == "sum":
        return int(pc.sum(rows.column(keys[0])).as_py() or 0)
    return rows.select(list(keys)).group_by(list(keys)).aggregate([]).num_rows


def count_by_fault(rows: pa.Table, kind: Kind) -> dict[str, int]:
    """The kind's count per fault_id the rows are charged to. A counted key whose rows
    name different faults (the deliveries of one duplicate) goes to the first of them
    in row order, so the counts add up to the kind's total."""
    if rows.num_rows == 0:
        return {}
    how, keys = kind.count_by
    owner = rows.column("fault_id").to_pylist()
    if how == "distinct":
        first: dict[tuple, str] = {}
        for key, f in zip(zip(*(rows.column(k).to_pylist() for k in keys)), owner, strict=True):
            first.setdefault(key, f)
        totals: dict[str, int] = defaultdict(int)
        for f in first.values():
            totals[f] += 1
        return dict(sorted(totals.items()))
    values = rows.column(keys[0]).to_pylist() if how == "sum" else [1] * rows.num_rows
    totals = defaultdict(int)
    for f, v in zip(owner, values, strict=True):
        totals[f] += int(v or 0)
    return dict(sorted(totals.items()))


EXPLAINED_GROUPS = 12
GROUP_BY = ("topic", "partition", "leader_at_ack", "elected_leader_at_ack", "fault_id")
# who a row is about, where its kind names one (a group's redeliveries and skips, a
# consumer's jumps): a run comparing two groups must be told which one it was
WHO = ("group_id", "consumer")


def explanations(rows: pa.Table, kind: Kind) -> list[dict]:
    """The kind's rows grouped by (topic, partition, who acknowledged, who was elected,
    the fault charged), each with its count (the kind's rule), first and last ack time
    and the faults active at them; overwritten rows also with the leader epochs that
    wrote the records that survived. The largest EXPLAINED_GROUPS groups."""
    if rows.num_rows == 0:
        return []
    n = rows.num_rows
    col = {c: (rows.column(c).to_pylist() if c in rows.column_names else [None] * n)
           for c in (*GROUP_BY, *WHO, "ack_ts_us", "faults_at_ack", "consumed_leader_epoch")}
    groups: dict[tuple, list[int]] = defaultdict(list)
    for i, key in enumerate(zip(*(col[c] for c in (*GROUP_BY, *WHO)), strict=True)):
        groups[key].append(i)
    out = []
    for key, idx in groups.items():
        times = [col["ack_ts_us"][i] for i in idx if col["ack_ts_us"][i] is not None]
        g = dict(zip(("topic", "partition", "leader", "elected_leader", "fault_id", "group",
                      "consumer"), key, strict=True))
        g.update(count=count(rows.take(idx), kind), first_ack_us=min(times, default=None),
                 last_ack_us=max(times, default=None),
                 faults=sorted({f for i in idx for f in (col["faults_at_ack"][i] or [])}))
        epochs = sorted({col["consumed_leader_epoch"][i] for i in idx} - {None})
        if epochs:
            g["surviving_leader_epochs"] = epochs
        out.append(g)
    out.sort(key=lambda g: (-g["count"], str(g["topic"]), g["partition"] or 0))
    return out[:EXPLAINED_GROUPS]


def _read_written(loc: RunLocation, kind: Kind) -> pa.Table:
    """The columns counting and explaining read, of what Spark wrote for a kind (only
    those: a kind may have many millions of rows)."""
    files = loc.list_parquet("report", "anomalies", kind.name)
    names = pq.read_schema(files[0], filesystem=loc.fs).names
    cols = [c for c in dict.fromkeys([*kind.count_by[1], *GROUP_BY, *WHO, "ack_ts_us",
                                      "faults_at_ack", "consumed_leader_epoch"]) if c in names]
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
