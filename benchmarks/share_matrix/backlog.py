"""How far a share group was behind its load, from a run's history (RESULTS, 2026-11-27:
librdkafka member-kill's final drain): per interval of seconds since the producers'
first send, the records produced, first deliveries (records delivered for the first
time), all deliveries and decisions of the members (the final drain aside), and the
records produced but not yet delivered at the interval's end.

    PYTHONPATH=$PWD .venv/bin/python benchmarks/share_matrix/backlog.py runs/<run> 0 9.8 35 43
"""
from __future__ import annotations

import sys
from pathlib import Path

import pyarrow.parquet as pq


def backlog(run: Path, bounds: list[float]) -> list[dict]:
    sent = [r["send_ts_us"] for r in pq.read_table(run / "history" / "produced", columns=["send_ts_us"])
            .to_pylist() if r["send_ts_us"]]
    rows = [r for r in pq.read_table(run / "history" / "share_deliveries").to_pylist()
            if r["consumer"] != "drain"]
    t0 = min(sent)
    first: dict[tuple, int] = {}
    for r in sorted(rows, key=lambda r: r["recv_ts_us"]):
        first.setdefault((r["group_id"], r["topic"], r["partition"], r["offset"]), r["recv_ts_us"])

    def count(times, a: float, b: float) -> int:
        return sum(1 for t in times if t is not None and a <= (t - t0) / 1e6 < b)

    out = []
    for a, b in zip(bounds, bounds[1:], strict=False):
        out.append({"from_s": a, "to_s": b, "produced": count(sent, a, b),
                    "first_deliveries": count(first.values(), a, b),
                    "deliveries": count((r["recv_ts_us"] for r in rows), a, b),
                    "decisions": count((r["ack_ts_us"] for r in rows), a, b),
                    "not_yet_delivered": count(sent, -1e9, b) - count(first.values(), -1e9, b)})
    return out


if __name__ == "__main__":
    for row in backlog(Path(sys.argv[1]), [float(x) for x in sys.argv[2:]]):
        print(row)
