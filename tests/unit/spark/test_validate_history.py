"""Malformed histories are refused before Spark starts, naming file and column."""
from __future__ import annotations

import json

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from core.history import SCHEMAS, HistoryWriter
from spark_reports.storage import RunLocation
from spark_reports.validate import HistoryInvalid, check_files
from verifiers.verify import verify_run


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


def _values(run):
    from spark_reports.validate import check_values
    loc = RunLocation.of(str(run))
    return check_values(loc, check_files(loc))


def test_value_outside_the_enumeration_names_files_and_column(tmp_path):
    _write(tmp_path, "produced", [PRODUCED, {**PRODUCED, "seq": 1, "record_id": "p0-1",
                                             "status": "ACKED"}])
    _write(tmp_path, "produced", [{**PRODUCED, "status": "lost"}], name="part-1.parquet")
    _write(tmp_path, "consumed", [CONSUMED])
    with pytest.raises(HistoryInvalid) as e:
        _values(tmp_path)
    msg = str(e.value)
    assert ("history/produced/part-0.parquet: column 'status' has value(s) outside "
            "['acked', 'failed', 'indeterminate']: 2 row(s), e.g. 'ACKED', 'lost' "
            "(also in part-1.parquet)") in msg


def test_verify_refuses_a_bad_value_before_spark(tmp_path):
    _write(tmp_path, "produced", [PRODUCED])
    _write(tmp_path, "consumed", [{**CONSUMED, "phase": "final"}])
    result = verify_run(str(tmp_path), spark_master="no-such-master://")
    assert result.exit_code == 2
    assert "column 'phase' has value(s) outside ['drain', 'run']" in result.verdict.reason


def test_nulls_checked_by_reading_when_footers_have_no_statistics(tmp_path):
    d = tmp_path / "history" / "produced"
    d.mkdir(parents=True)
    rows = [PRODUCED, {**PRODUCED, "seq": 1, "record_id": "p0-1", "send_ts_us": None}]
    pq.write_table(pa.Table.from_pylist(rows, schema=SCHEMAS["produced"]), d / "part-0.parquet",
                   write_statistics=False)
    _write(tmp_path, "consumed", [CONSUMED])
    with pytest.raises(HistoryInvalid) as e:
        _values(tmp_path)
    assert ("history/produced/part-0.parquet: column 'send_ts_us' has null value(s) but may "
            "not be null: 1 row(s)") in str(e.value)


@pytest.mark.parametrize("statistics", [True, False])
def test_counts_and_names(tmp_path, statistics):
    d = tmp_path / "history" / "produced"
    d.mkdir(parents=True)
    produced = [PRODUCED,
                {**PRODUCED, "producer": "p1", "seq": 0, "record_id": "p1-0", "topic": "u",
                 "partition": 3, "offset": 7, "status": "failed", "txn_id": "x",
                 "txn_outcome": "aborted"},
                {**PRODUCED, "seq": 1, "record_id": "p0-1", "partition": None, "offset": None,
                 "status": "indeterminate", "ack_ts_us": None}]
    pq.write_table(pa.Table.from_pylist(produced, schema=SCHEMAS["produced"]), d / "part-0.parquet",
                   write_statistics=statistics, row_group_size=2)
    _write(tmp_path, "consumed", [
        CONSUMED, {**CONSUMED, "consumer": "c0", "group_id": "g", "phase": "run", "offset": 9,
                   "poll_seq": 0, "assignment": 1},
        {**CONSUMED, "consumer": "c1", "group_id": "g-drain", "record_id": None, "topic": "v"},
        {**CONSUMED, "consumer": "c2", "group_id": "h", "phase": "run",
         "isolation": "read_uncommitted", "poll_seq": 0}])
    _write(tmp_path, "commits", [{"run_id": "r", "consumer": "c0", "group_id": "g", "topic": "t",
                                  "partition": 0, "offset": 1, "ok": ok, "ts_us": 5}
                                 for ok in (True, False, True)])
    v = _values(tmp_path)
    # c2's run row lacks an assignment: the poll kinds leave it out
    assert v.counts == {"sent": 3, "acked": 1, "failed": 1, "indeterminate": 1, "consumed": 4,
                        "consumed_run": 2, "consumed_drain": 2, "consumed_foreign": 1,
                        "consumed_run_unordered": 1, "commits": 3, "commits_ok": 2}
    assert v.topics == {"t", "u", "v"}
    assert v.read_committed_groups == {"g"}
    assert v.partitions == [("t", 0), ("u", 3)]
    assert v.run_id == "r"


def test_a_history_written_before_poll_seq_and_assignment_is_read(tmp_path):
    """Both columns were added to the contract later: files without them are valid,
    and their run rows are left out of the poll kinds."""
    _write(tmp_path, "produced", [PRODUCED])
    old = pa.schema([f for f in SCHEMAS["consumed"] if f.name not in ("poll_seq", "assignment")])
    d = tmp_path / "history" / "consumed"
    d.mkdir(parents=True)
    pq.write_table(pa.Table.from_pylist(
        [CONSUMED, {**CONSUMED, "phase": "run", "group_id": "g"}], schema=old), d / "part-0.parquet")
    assert _values(tmp_path).counts["consumed_run_unordered"] == 1
