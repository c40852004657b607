"""One line per run of scenario.yaml: the version, the paused broker and whether it was
also the share coordinator of (orders-q, orders, 0), the run's verdict, its
share_redelivered_after_accept and share_double_accept counts, and how many of those
rows came from a deposed leader's answer: a delivery received within 1 s after
deposed.py saw that member handed records by a broker no longer the leader.

    PYTHONPATH=$PWD .venv/bin/python benchmarks/evidence/share-deposed-leader/summarize.py RUN_DIR...
"""
from __future__ import annotations

import datetime
import json
import sys
from pathlib import Path

import pyarrow.parquet as pq

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "share_matrix"))
from deposed import deposed_answers  # noqa: E402  (a script beside this one, not a package)


def _us(stamp: str) -> float:
    t = datetime.datetime.strptime(stamp, "%Y-%m-%d %H:%M:%S,%f")
    return t.replace(tzinfo=datetime.UTC).timestamp() * 1e6


def coordinator_at_pause(run: Path) -> int | None:
    """The share coordinator of (orders-q, orders, 0) last observed before the pause."""
    last = None
    for e in sorted(pq.read_table(run / "history" / "events").to_pylist(), key=lambda e: e["ts_us"]):
        if e["kind"] == "fault":
            break
        if e["kind"] == "observe" and e["name"] == "share-coordinator":
            last = json.loads(e["detail"])["coordinator"]
    return last


def line(run: Path) -> str:
    summary = json.loads((run / "report" / "summary.json").read_text())
    fault = json.loads((run / "faults.json").read_text())[0]
    paused = fault["detail"]["node_ids"][0]
    coord = coordinator_at_pause(run)
    answers = deposed_answers(run)
    starts = [(a.split()[0], _us(" ".join(a.split()[1:3]))) for a in answers]
    rows = pq.read_table(run / "report" / "anomalies" / "share_redelivered_after_accept").to_pylist()
    from_deposed = sum(1 for r in rows if any(c == r["consumer"] and 0 <= r["recv_ts_us"] - t < 1e6
                                              for c, t in starts))
    a = summary["anomalies"]
    version = json.loads((run / "manifest.json").read_text())["kafka"]
    return (f"{run.name}\t{version}\tpaused {paused}\tcoordinator {coord}\t{summary['verdict']['status']}\t"
            f"after_accept {a['share_redelivered_after_accept']} (from deposed answers {from_deposed})\t"
            f"double_accept {a['share_double_accept']}\tdeposed answers {len(answers)}")


if __name__ == "__main__":
    for d in sys.argv[1:]:
        print(line(Path(d)))
