"""The run history: table schemas and a crash-safe chunked Parquet writer.

The contract is ../shared/spec/history.md (in the repository: docs/history.md).
Workloads, faults and the cluster observer only append rows through
`HistoryWriter`; the reconciler only reads.

Each writer flushes a part file every `flush_rows` rows or `flush_seconds`
seconds. A part is written under a dot-prefixed temporary name and renamed, so
a harness killed at any moment leaves only complete part files behind (readers
ignore names starting with '.').
"""
from __future__ import annotations

import json
import os
import threading
import time
import uuid
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

TABLES = ("produced", "consumed", "commits", "events", "share_deliveries")

# Who read a record, and where it sits: the leading columns of every table a reader
# writes (consumed, commits, share_deliveries), in this order.
_READER = [("run_id", pa.string()), ("consumer", pa.string()), ("group_id", pa.string())]
_POSITION = [("topic", pa.string()), ("partition", pa.int32()), ("offset", pa.int64())]

SCHEMAS: dict[str, pa.Schema] = {
    "produced": pa.schema([
        ("run_id", pa.string()),
        ("producer", pa.string()),
        ("seq", pa.int64()),
        ("record_id", pa.string()),
        ("key", pa.string()),
        ("topic", pa.string()),
        ("partition", pa.int32()),
        ("offset", pa.int64()),
        ("status", pa.string()),
        ("error", pa.string()),
        ("send_ts_us", pa.int64()),
        ("ack_ts_us", pa.int64()),
        ("txn_id", pa.string()),
        ("txn_seq", pa.int64()),
        ("txn_outcome", pa.string()),
        ("acked_by", pa.int32()),
        # a compacted topic's write (spec: "Compacted topics"): its key's version (the
        # value carries it too) and whether it is a tombstone (a null value); null for
        # every other producer
        ("version", pa.int64()),
        ("tombstone", pa.bool_()),
    ]),
    "consumed": pa.schema([
        *_READER,
        ("phase", pa.string()),
        *_POSITION,
        ("key", pa.string()),
        ("record_id", pa.string()),
        ("isolation", pa.string()),
        ("recv_ts_us", pa.int64()),
        ("poll_seq", pa.int64()),
        ("leader_epoch", pa.int32()),
        ("assignment", pa.int32()),
        # a pipeline's output (spec: "Pipelines"): the input it was computed from and,
        # keyed, the pipeline's count of inputs for that key
        ("source_record_id", pa.string()),
        ("key_count", pa.int64()),
        # and which processor instance wrote it, in which of its transactions (the
        # value's `<instance> <txn>`): what explains a pipeline row
        ("pipeline_instance", pa.string()),
        ("pipeline_txn", pa.int64()),
        # a mirrored run (spec: "Mirrored topics"): the cluster the record was read
        # from, `source` or `target`; null: the run's one cluster (the source)
        ("cluster", pa.string()),
    ]),
    "commits": pa.schema([
        *_READER, *_POSITION,
        ("ok", pa.bool_()),
        ("error", pa.string()),
        ("ts_us", pa.int64()),
        # a mirrored run (spec: "Mirrored topics"): MirrorMaker 2's checkpoint of a
        # group, as a pair of rows, `source` (the group's committed offset) and
        # `target` (its translation); null: a consumer's own commit on the run's cluster
        ("cluster", pa.string()),
    ]),
    "events": pa.schema([
        ("run_id", pa.string()),
        ("ts_us", pa.int64()),
        ("kind", pa.string()),
        ("name", pa.string()),
        ("target", pa.string()),
        ("detail", pa.string()),
    ]),
    # share groups (KIP-932): one row per record a share consumer handed to the
    # application, with what the member decided and what the broker answered
    "share_deliveries": pa.schema([
        *_READER, *_POSITION,
        ("record_id", pa.string()),
        ("delivery_count", pa.int32()),
        ("recv_ts_us", pa.int64()),
        ("ack", pa.string()),
        ("ack_ts_us", pa.int64()),
        ("ack_result", pa.string()),
        ("ack_error", pa.string()),
    ]),
}

# Columns that may be null; every other column must always be set.
NULLABLE: dict[str, frozenset[str]] = {
    "produced": frozenset({"key", "partition", "offset", "error", "ack_ts_us",
                           "txn_id", "txn_seq", "txn_outcome", "acked_by",
                           "version", "tombstone"}),
    "consumed": frozenset({"group_id", "key", "record_id", "poll_seq", "leader_epoch",
                           "assignment", "source_record_id", "key_count",
                           "pipeline_instance", "pipeline_txn", "cluster"}),
    "commits": frozenset({"group_id", "error", "cluster"}),
    "events": frozenset({"target"}),
    "share_deliveries": frozenset({"record_id", "delivery_count", "ack", "ack_ts_us",
                                   "ack_result", "ack_error"}),
}

# Allowed values of enumerated columns.
ENUMS: dict[tuple[str, str], frozenset[str]] = {
    ("produced", "status"): frozenset({"acked", "failed", "indeterminate"}),
    ("produced", "txn_outcome"): frozenset({"committed", "aborted", "unknown"}),
    ("consumed", "phase"): frozenset({"run", "drain"}),
    ("consumed", "isolation"): frozenset({"read_uncommitted", "read_committed"}),
    ("events", "kind"): frozenset({"phase", "fault", "heal", "observe", "client"}),
    ("share_deliveries", "ack"): frozenset({"accept", "release", "reject"}),
    ("share_deliveries", "ack_result"): frozenset({"ok", "error", "unknown"}),
}

EVENT_KINDS = ENUMS[("events", "kind")]
# The `client` event a workload writes when it dies on its own (an exception, a
# fatal client error, an exit code nobody asked for): load that stopped early
# proves nothing, so the verdict counts these (`workload_deaths`).
WORKLOAD_DIED = "workload-died"
# A phase event at the moment the run ends the load before its duration
# (workload.end_after_faults_s); its detail says how long after the faults.
LOAD_CUT = "load-cut"
# The `client` event of a fatal client error (the client says it cannot go on): error,
# reason, the call and the transaction it hit, and the policy followed (stop: the
# workload dies; restart: a new incarnation goes on). Counted: `client_fatals`.
CLIENT_FATAL = "client-fatal"


def now_us() -> int:
    """The one harness clock: microseconds since the Unix epoch."""
    return time.time_ns() // 1000


def record_id(producer: str, seq: int) -> str:
    return f"{producer}-{seq}"


def table_dir(run_dir: os.PathLike | str, table: str) -> Path:
    if table not in SCHEMAS:
        raise ValueError(f"unknown history table {table!r}; expected one of {TABLES}")
    return Path(run_dir) / "history" / table


class HistoryWriter:
    """Appends rows of one table, flushing complete part files as it goes.

    Thread-safe. Rows are dicts keyed by column name (missing nullable columns
    become null; `run_id` is filled in). Use as a context manager or call
    `close()`; rows not yet flushed when the process dies are lost, so flush
    intervals stay short.
    """

    def __init__(self, run_dir: os.PathLike | str, table: str, run_id: str, *,
                 writer_name: str | None = None, flush_rows: int = 5000,
                 flush_seconds: float = 2.0):
        self.table = table
        self.schema = SCHEMAS[table]
        self.run_id = run_id
        self.dir = table_dir(run_dir, table)
        self.dir.mkdir(parents=True, exist_ok=True)
        self.writer_name = writer_name or f"{os.getpid()}-{uuid.uuid4().hex[:8]}"
        self.flush_rows = flush_rows
        self.flush_seconds = flush_seconds
        self._columns: dict[str, list] = {f.name: [] for f in self.schema}
        self._rows = 0
        self._part = 0
        self._last_flush = time.monotonic()
        self._lock = threading.Lock()
        self._closed = False
        self.rows_written = 0

    def append(self, row: Mapping[str, Any]) -> None:
        with self._lock:
            if self._closed:
                raise RuntimeError(f"history writer for {self.table} is closed")
            for name, values in self._columns.items():
                if name == "run_id":
                    values.append(row.get("run_id", self.run_id))
                else:
                    values.append(row.get(name))
            self._rows += 1
            if self._rows >= self.flush_rows or (
                    time.monotonic() - self._last_flush >= self.flush_seconds):
                self._flush_locked()

    def extend(self, rows: Iterable[Mapping[str, Any]]) -> None:
        for row in rows:
            self.append(row)

    def append_columns(self, columns: Mapping[str, Any], **constants: Any) -> None:
        """Append many rows given column-wise: the fast path for high-rate writers.

        `columns` maps column names to equal-length sequences; `constants` gives
        one value for every row (e.g. producer="p0"). Other columns are null;
        run_id is filled in.
        """
        lengths = {len(v) for v in columns.values()}
        if len(lengths) > 1:
            raise ValueError(f"columns of unequal length: {sorted(lengths)}")
        n = lengths.pop() if lengths else 0
        if not n:
            return
        unknown = (set(columns) | set(constants)) - set(self._columns)
        if unknown:
            raise ValueError(f"unknown columns for {self.table}: {sorted(unknown)}")
        with self._lock:
            if self._closed:
                raise RuntimeError(f"history writer for {self.table} is closed")
            for name, values in self._columns.items():
                if name in columns:
                    values.extend(columns[name])
                elif name in constants:
                    values.extend([constants[name]] * n)
                elif name == "run_id":
                    values.extend([self.run_id] * n)
                else:
                    values.extend([None] * n)
            self._rows += n
            if self._rows >= self.flush_rows or (
                    time.monotonic() - self._last_flush >= self.flush_seconds):
                self._flush_locked()

    def maybe_flush(self) -> None:
        """Flush if the time interval has passed (call from idle loops)."""
        with self._lock:
            if self._rows and time.monotonic() - self._last_flush >= self.flush_seconds:
                self._flush_locked()

    def flush(self) -> None:
        with self._lock:
            self._flush_locked()

    def _flush_locked(self) -> None:
        self._last_flush = time.monotonic()
        if not self._rows:
            return
        batch = pa.table(self._columns, schema=self.schema)
        name = f"{self.writer_name}-{self._part:06d}.parquet"
        tmp = self.dir / f".{name}.tmp"
        pq.write_table(batch, tmp)
        os.replace(tmp, self.dir / name)
        self._part += 1
        self.rows_written += self._rows
        self._columns = {f.name: [] for f in self.schema}
        self._rows = 0

    def close(self) -> None:
        with self._lock:
            if not self._closed:
                self._flush_locked()
                self._closed = True

    def __enter__(self) -> "HistoryWriter":
        return self

    def __exit__(self, *exc) -> None:
        self.close()


class EventLog:
    """Convenience wrapper for the `events` table (faults, observer, phases)."""

    def __init__(self, run_dir: os.PathLike | str, run_id: str, *,
                 writer_name: str | None = None, flush_seconds: float = 1.0):
        self._writer = HistoryWriter(run_dir, "events", run_id,
                                     writer_name=writer_name,
                                     flush_rows=1000, flush_seconds=flush_seconds)

    def emit(self, kind: str, name: str, target: str | None = None,
             ts_us: int | None = None, **detail: Any) -> None:
        if kind not in EVENT_KINDS:
            raise ValueError(f"unknown event kind {kind!r}; expected one of {sorted(EVENT_KINDS)}")
        self._writer.append({
            "ts_us": ts_us if ts_us is not None else now_us(),
            "kind": kind, "name": name, "target": target,
            "detail": json.dumps(detail, sort_keys=True, default=str),
        })

    def flush(self) -> None:
        self._writer.flush()

    def maybe_flush(self) -> None:
        """Flush if the time interval has passed (call from idle loops)."""
        self._writer.maybe_flush()

    def close(self) -> None:
        self._writer.close()

    def __enter__(self) -> "EventLog":
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def part_files(run_dir: os.PathLike | str, table: str) -> list[Path]:
    """Complete part files of one table (temporary, dot-prefixed names excluded)."""
    d = table_dir(run_dir, table)
    if not d.is_dir():
        return []
    return sorted(p for p in d.glob("*.parquet") if not p.name.startswith("."))


def read_table(run_dir: os.PathLike | str, table: str) -> pa.Table:
    """Read a whole table into memory (for tests and small runs only)."""
    files = part_files(run_dir, table)
    if not files:
        return SCHEMAS[table].empty_table()
    return pa.concat_tables(pq.read_table(f, schema=SCHEMAS[table]) for f in files)
