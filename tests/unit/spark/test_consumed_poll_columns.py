"""consumed.poll_seq and consumed.assignment as the Java consumer's converter writes them
(the columns poll_skip and nonmonotonic_poll read): poll order from the tool's
record lines, a generation per assignment change."""
from __future__ import annotations

import json

import pyarrow.parquet as pq

from core.history import HistoryWriter
from workloads.java_clients import JavaConsumerConverter


def _line(name: str, **fields) -> str:
    return json.dumps({"timestamp": 1_700_000_001_000, "name": name, **fields})


def test_java_consumer_rows_carry_poll_order_and_assignment_generation(tmp_path):
    w = {t: HistoryWriter(tmp_path, t, "r", writer_name="jc") for t in ("consumed", "commits")}
    conv = JavaConsumerConverter("jc0", "g1", "read_committed", w["consumed"], w["commits"])
    parts = [{"topic": "t", "partition": 0}]
    for line in (
            _line("partitions_assigned", partitions=parts),
            _line("record_data", key=None, value="p0-0 x", topic="t", partition=0, offset=0),
            _line("record_data", key=None, value="p0-1 x", topic="t", partition=0, offset=1),
            _line("partitions_revoked", partitions=parts),
            _line("partitions_assigned", partitions=parts),
            _line("record_data", key=None, value="p0-1 x", topic="t", partition=0, offset=1)):
        conv.feed(line)
    for writer in w.values():
        writer.close()
    rows = pq.read_table(tmp_path / "history" / "consumed").to_pylist()
    assert [(r["offset"], r["poll_seq"], r["assignment"]) for r in rows] == [
        (0, 0, 1), (1, 1, 1), (1, 2, 3)]
