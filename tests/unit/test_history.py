import json

import pyarrow.parquet as pq
import pytest

from core.history import SCHEMAS, EventLog, HistoryWriter, part_files, read_table


def test_writer_flushes_in_chunks_and_reads_back(tmp_path):
    with HistoryWriter(tmp_path, "produced", "r1", flush_rows=3, flush_seconds=999) as w:
        for i in range(7):
            w.append({"producer": "p0", "seq": i, "record_id": f"p0-{i}", "topic": "t",
                      "status": "acked", "send_ts_us": i})
        assert len(part_files(tmp_path, "produced")) == 2   # two full chunks before close
    t = read_table(tmp_path, "produced")
    assert t.num_rows == 7 and t.schema == SCHEMAS["produced"]
    assert set(t.column("run_id").to_pylist()) == {"r1"}
    assert t.column("offset").null_count == 7


def test_half_written_part_is_ignored(tmp_path):
    with HistoryWriter(tmp_path, "commits", "r1") as w:
        w.append({"consumer": "c0", "group_id": "g", "topic": "t", "partition": 0,
                  "offset": 5, "ok": True, "ts_us": 1})
    d = tmp_path / "history" / "commits"
    (d / ".crashed-000001.parquet.tmp").write_bytes(b"PAR1 half")
    assert read_table(tmp_path, "commits").num_rows == 1
    assert all(not p.name.startswith(".") for p in part_files(tmp_path, "commits"))


def test_event_log_writes_json_detail(tmp_path):
    with EventLog(tmp_path, "r1") as ev:
        ev.emit("fault", "kill-leader", "kafka-1", fault_id="f1", signal="SIGKILL")
        with pytest.raises(ValueError):
            ev.emit("explosion", "x")
    rows = read_table(tmp_path, "events").to_pylist()
    assert len(rows) == 1 and rows[0]["target"] == "kafka-1"
    assert json.loads(rows[0]["detail"]) == {"fault_id": "f1", "signal": "SIGKILL"}
    for f in part_files(tmp_path, "events"):
        assert pq.read_schema(f) == SCHEMAS["events"]
