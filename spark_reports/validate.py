"""Check a history before computing anything from it.

Every problem names the file and the column. Schema and null checks read only
Parquet footers (cheap even for thousands of part files); enumerated values
are checked with one small Spark aggregation per table.

Which tables must exist: `produced` and `consumed` need at least one part file
with at least one row (a run without them cannot be judged). `commits` and
`events` may be absent or empty: a workload may not commit offsets (assign
mode, drain only) and a run without faults may have no events; the report
says so.
"""
from __future__ import annotations

import posixpath
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

import pyarrow as pa
import pyarrow.parquet as pq

from harness.errors import HarnessError
from harness.history import ENUMS, NULLABLE, SCHEMAS, TABLES
from spark_reports.storage import RunLocation

REQUIRED_TABLES = ("produced", "consumed")
MAX_PROBLEMS = 20


class HistoryInvalid(HarnessError):
    """The history cannot be judged; `problems` lists every finding (file, column, fix)."""

    def __init__(self, problems: list[str]):
        self.problems = problems
        shown = problems[:MAX_PROBLEMS]
        more = f"\n  … and {len(problems) - len(shown)} more" if len(problems) > len(shown) else ""
        super().__init__("malformed history:\n  " + "\n  ".join(shown) + more)


@dataclass
class TableFiles:
    table: str
    files: list[str]
    rows: int = 0
    nulls_unknown: set[str] = field(default_factory=set)   # non-nullable columns without stats


@dataclass
class HistoryFiles:
    tables: dict[str, TableFiles]
    notes: list[str]

    def rows(self, table: str) -> int:
        return self.tables[table].rows


def _same_type(actual: pa.DataType, expected: pa.DataType) -> bool:
    if pa.types.is_dictionary(actual):
        actual = actual.value_type
    if pa.types.is_string(expected):
        return pa.types.is_string(actual) or pa.types.is_large_string(actual)
    return actual == expected


def _check_file(loc: RunLocation, table: str, path: str) -> tuple[int, list[str], set[str]]:
    """Footer checks of one part file: columns, types, nulls. Returns (rows, problems, columns
    whose null count the footer does not give)."""
    shown = loc.display(path)
    try:
        with loc.fs.open_input_file(path) as f:
            meta = pq.ParquetFile(f).metadata
            schema = meta.schema.to_arrow_schema()
    except Exception as e:  # noqa: BLE001 - any unreadable file is a finding, not a crash
        return 0, [f"{shown}: not a readable Parquet file ({type(e).__name__}: {e})"], set()
    problems: list[str] = []
    expected = SCHEMAS[table]
    for fld in expected:
        idx = schema.get_field_index(fld.name)
        if idx < 0:
            problems.append(f"{shown}: column {fld.name!r} is missing "
                            f"(fix: write {table} with harness.history.SCHEMAS[{table!r}])")
            continue
        actual = schema.field(idx).type
        if not _same_type(actual, fld.type):
            problems.append(f"{shown}: column {fld.name!r} has type {actual}, expected {fld.type}")
    unknown: set[str] = set()
    if not problems:
        names = [meta.schema.column(i).path for i in range(meta.num_columns)]
        for col in expected.names:
            if col in NULLABLE[table]:
                continue
            j = names.index(col)
            nulls = 0
            for rg in range(meta.num_row_groups):
                st = meta.row_group(rg).column(j).statistics
                if st is None or not st.has_null_count:
                    unknown.add(col)
                    break
                nulls += st.null_count
            if nulls:
                problems.append(f"{shown}: column {col!r} has {nulls} null value(s) but may not be null")
    return meta.num_rows, problems, unknown


def check_files(loc: RunLocation) -> HistoryFiles:
    """Footer-level validation of every table. Raises HistoryInvalid."""
    problems: list[str] = []
    notes: list[str] = []
    tables: dict[str, TableFiles] = {}
    with ThreadPoolExecutor(max_workers=8) as pool:
        for table in TABLES:
            files = loc.list_parquet("history", table)
            tf = TableFiles(table, files)
            tables[table] = tf
            if not files:
                where = loc.display(loc.path("history", table))
                if table in REQUIRED_TABLES:
                    problems.append(f"{where}: table {table!r} is missing (no part files); "
                                    f"a run must record every {table} row")
                else:
                    notes.append(f"table {table!r} has no part files: treated as empty")
                continue
            for rows, probs, unknown in pool.map(lambda p: _check_file(loc, table, p), files):
                tf.rows += rows
                problems.extend(probs)
                tf.nulls_unknown |= unknown
            if tf.rows == 0 and table in REQUIRED_TABLES and not any(
                    table in p for p in problems):
                problems.append(f"{loc.display(loc.path('history', table))}: table {table!r} "
                                f"is empty ({len(files)} part file(s), 0 rows)")
            elif tf.rows == 0:
                notes.append(f"table {table!r} is empty")
    if problems:
        raise HistoryInvalid(problems)
    return HistoryFiles(tables, notes)


def check_values(spark, loc: RunLocation, history: HistoryFiles, frames: dict,
                 extra: dict | None = None, per_group: dict | None = None) -> dict:
    """Enumerated values and (when footers lack statistics) non-null columns, with Spark.

    One aggregation per table, which also computes the caller's `extra`
    aggregations (table → [named Column]) so the history is scanned once; their
    values are returned (table → {name: value}; {} for an empty table). With
    `per_group` (table → (key Columns, {name: Column})) that table's aggregation
    is grouped by the keys (few groups): `extra` must then be counts or sums (they
    are summed over the groups), and the rows of keys and per-group aggregates are
    returned too, under "_groups". Only when something is wrong a second query
    finds the first file holding the bad value. Raises HistoryInvalid.
    """
    from pyspark.sql import functions as F

    problems: list[str] = []
    results: dict[str, dict] = {}
    for table, df in frames.items():
        wanted = list((extra or {}).get(table, []))
        if history.tables[table].rows == 0:
            results[table] = {}
            continue
        enum_cols = [col for (t, col) in ENUMS if t == table]
        null_cols = sorted(history.tables[table].nulls_unknown)
        checks = []
        for col in enum_cols:
            allowed = sorted(ENUMS[(table, col)])
            bad = F.col(col).isNotNull() & ~F.col(col).isin(*allowed)
            checks.append((col, bad, f"has value(s) outside {allowed}"))
        for col in null_cols:
            checks.append((col, F.col(col).isNull(), "has null value(s) but may not be null"))
        if not checks and not wanted:
            results[table] = {}
            continue
        aggs = [F.sum(F.when(bad, 1).otherwise(0)).alias(f"bad_{i}")
                for i, (_, bad, _) in enumerate(checks)]
        keys, grouped = (per_group or {}).get(table, ((), {}))
        if keys:
            rows = [r.asDict() for r in df.groupBy(*keys).agg(
                *aggs, *wanted, *[c.alias(k) for k, c in grouped.items()]).collect()]
            names = [k for k in (rows[0] if rows else {}) if k not in grouped]
            row = {k: sum(r[k] or 0 for r in rows) for k in names[len(keys):]}
            row["_groups"] = [{k: r[k] for k in (*names[:len(keys)], *grouped)} for r in rows]
        else:
            row = df.agg(*aggs, *wanted).collect()[0].asDict()
        results[table] = {k: v for k, v in row.items() if not k.startswith("bad_")}
        for i, (col, bad, what) in enumerate(checks):
            n = row[f"bad_{i}"] or 0
            if not n:
                continue
            sample = (df.where(bad).select(F.input_file_name().alias("file"),
                                           F.col(col).cast("string").alias("value"))
                      .limit(3).collect())
            files = sorted({posixpath.basename(r["file"]) for r in sample})
            values = sorted({repr(r["value"]) for r in sample})
            problems.append(f"{loc.display(loc.path('history', table))}/{files[0]}: column "
                            f"{col!r} {what}: {n} row(s), e.g. {', '.join(values)}"
                            + (f" (also in {', '.join(files[1:])})" if len(files) > 1 else ""))
    if problems:
        raise HistoryInvalid(problems)
    return results
