"""Malformed histories are refused before Spark starts, naming file and column."""
from __future__ import annotations

import json

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from harness.history import SCHEMAS, HistoryWriter
from spark_reports.validate import HistoryInvalid, check_files
from spark_reports.storage import RunLocation
from spark_reports.verify import verify_run


def _write(run, table, rows, schema=None, name="part-0.parquet"):
    d = run / "history" / table
    d.mkdir(parents=True, exist_ok=True)
    pq.write_table(pa.Table.from_pylist(rows, schema=schema or SCHEMAS[table]), d / name)


PRODUCED = {"run_id": "r", "producer": "p0", "seq": 0, "record_id": "p0-0", "topic": "t",
            "partition": 0, "offset": 0, "status": "acked", "send_ts_us": 1, "ack_ts_us": 2}
CONSUMED = {"run_id": "r", "consumer": "drain", "phase": "drain", "topic": "t", "partition": 0,
            "offset": 0, "record_id": "p0-0", "isolation": "read_committed", "recv_ts_us": 3}


def _problems(run) -> str:
    with pytest.raises(HistoryInvalid) as e:
        check_files(RunLocation.of(str(run)))
    return str(e.value)


def test_missing_tables(tmp_path):
    msg = _problems(tmp_path)
    assert "history/produced: table 'produced' is missing" in msg
    assert "history/consumed: table 'consumed' is missing" in msg


def test_empty_table(tmp_path):
    _write(tmp_path, "produced", [])
    _write(tmp_path, "consumed", [CONSUMED])
    assert "table 'produced' is empty (1 part file(s), 0 rows)" in _problems(tmp_path)


def test_missing_column(tmp_path):
    schema = SCHEMAS["produced"].remove(SCHEMAS["produced"].get_field_index("status"))
    _write(tmp_path, "produced", [PRODUCED], schema)
    _write(tmp_path, "consumed", [CONSUMED])
    assert "history/produced/part-0.parquet: column 'status' is missing" in _problems(tmp_path)


def test_wrong_type(tmp_path):
    i = SCHEMAS["consumed"].get_field_index("offset")
    schema = SCHEMAS["consumed"].set(i, pa.field("offset", pa.string()))
    _write(tmp_path, "produced", [PRODUCED])
    _write(tmp_path, "consumed", [{**CONSUMED, "offset": "0"}], schema)
    assert ("history/consumed/part-0.parquet: column 'offset' has type string, expected int64"
            in _problems(tmp_path))


def test_null_in_required_column(tmp_path):
    _write(tmp_path, "produced", [{**PRODUCED, "send_ts_us": None}])
    _write(tmp_path, "consumed", [CONSUMED])
    assert "column 'send_ts_us' has 1 null value(s)" in _problems(tmp_path)


def test_not_parquet(tmp_path):
    _write(tmp_path, "produced", [PRODUCED])
    (tmp_path / "history" / "consumed").mkdir(parents=True)
    (tmp_path / "history" / "consumed" / "x.parquet").write_text("nope")
    assert "history/consumed/x.parquet: not a readable Parquet file" in _problems(tmp_path)


def test_optional_tables_and_temp_files(tmp_path):
    _write(tmp_path, "produced", [PRODUCED])
    _write(tmp_path, "consumed", [CONSUMED])
    (tmp_path / "history" / "consumed" / ".half-written.parquet.tmp").write_text("x")
    h = check_files(RunLocation.of(str(tmp_path)))
    assert h.rows("produced") == 1 and h.tables["commits"].files == []
    assert "table 'commits' has no part files: treated as empty" in h.notes


def test_verify_writes_unknown_report_for_bad_history(tmp_path):
    """No Spark needed: footer checks fail first, and the report says why."""
    _write(tmp_path, "produced", [PRODUCED])
    result = verify_run(str(tmp_path))
    assert result.exit_code == 2
    s = json.loads((tmp_path / "report" / "summary.json").read_text())
    assert s["verdict"]["status"] == "unknown"
    assert "table 'consumed' is missing" in s["verdict"]["reason"]
    junit = (tmp_path / "report" / "junit.xml").read_text()
    assert "<error" in junit and "table 'consumed' is missing" in junit
    assert "UNKNOWN" in (tmp_path / "report" / "index.html").read_text()


def test_history_writer_files_pass(tmp_path):
    for table, row in (("produced", PRODUCED), ("consumed", CONSUMED)):
        with HistoryWriter(tmp_path, table, "r") as w:
            w.append(row)
    assert check_files(RunLocation.of(str(tmp_path))).rows("consumed") == 1
