"""Copies what a run of scenario.yaml shows into OUT_DIR (the run directory itself is tens
of MB and is not kept): faults.json, the scenario, the verdict's counts, the
share_redelivered_after_accept rows grouped by delivery (rows.txt), the members' client
lines (ShareFetch answers and acknowledgements, no TRACE) around the pause and the resume
(clients.log), and the brokers' lines about orders-0 and the share group in the same
windows (brokers.log).

    PYTHONPATH=$PWD .venv/bin/python benchmarks/evidence/share-deposed-leader/excerpt.py RUN_DIR OUT_DIR
"""
from __future__ import annotations

import collections
import datetime
import json
import re
import shutil
import sys
from pathlib import Path

import pyarrow.parquet as pq

CLIENT = re.compile(r"Completed Share|returned fetch data|acknowledge request|Metadata update|"
                    r"leader|NotLeader|UnknownTopicOrPartition|error", re.I)
BROKER = re.compile(r"orders-0|orders-q|DelayedShareFetch|fenced|Fencing broker|RaftManager.*Transition", re.I)
STAMP = re.compile(r"^\[(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3})\]")


def _t(us: float) -> str:
    return datetime.datetime.fromtimestamp(us / 1e6, datetime.UTC).strftime("%H:%M:%S.%f")[:-3]


def _us(stamp: str) -> float:
    t = datetime.datetime.strptime(stamp, "%Y-%m-%d %H:%M:%S,%f")
    return t.replace(tzinfo=datetime.UTC).timestamp() * 1e6


def windows(run: Path) -> list[tuple[float, float]]:
    """1 s before the pause to 2 s after it began; the new leader's first 3 s; 1 s before
    the resume to 3 s after it."""
    events = pq.read_table(run / "history" / "events").to_pylist()
    pause = next(e["ts_us"] for e in events if e["kind"] == "fault")
    fault = json.loads((run / "faults.json").read_text())[0]
    resume = pause + (fault["healed_s"] - fault["injected_s"]) * 1e6
    elected = [e["ts_us"] for e in events if e["kind"] == "observe" and e["name"] == "leader"
               and e["ts_us"] > pause]
    out = [(pause - 1e6, pause + 2e6), (resume - 1e6, resume + 3e6)]
    if elected:
        out.append((elected[0] - 4e6, elected[0] + 3e6))
    return out


def lines(path: Path, keep: re.Pattern, wins: list[tuple[float, float]], width: int = 600):
    for line in path.open(errors="replace"):
        m = STAMP.match(line)
        if m and " TRACE " not in line and keep.search(line):
            ts = _us(m.group(1))
            if any(a <= ts <= b for a, b in wins):
                yield line.rstrip()[:width]


def rows_text(run: Path) -> str:
    rows = pq.read_table(run / "report" / "anomalies" / "share_redelivered_after_accept").to_pylist()
    groups = collections.defaultdict(list)
    for r in rows:
        key = (r["consumer"], _t(r["recv_ts_us"]), r["delivery_count"], r["ack_result"], r["ack_error"],
               r["accepted_by"], _t(r["accepted_at_us"]), r["accepted_delivery_count"],
               r["elected_leader_at_ack"], r["share_coordinator_at_ack"])
        groups[key].append(r["offset"])
    head = ("member recv delivery_count ack_result ack_error | accepted_by accepted_at "
            "accepted_delivery_count elected_leader_at_ack share_coordinator_at_ack | offsets (count)")
    body = [" ".join(map(str, k[:5])) + " | " + " ".join(map(str, k[5:])) +
            f" | {min(v)}-{max(v)} ({len(v)})" for k, v in sorted(groups.items())]
    return "\n".join([f"{len(rows)} rows", head, *body]) + "\n"


def main(run: Path, out: Path) -> None:
    out.mkdir(parents=True, exist_ok=True)
    for name in ("faults.json", "scenario.yaml"):
        shutil.copy(run / name, out / name)
    summary = json.loads((run / "report" / "summary.json").read_text())
    (out / "summary.json").write_text(json.dumps({k: summary[k] for k in ("run_id", "counts", "anomalies", "verdict")},
                                                 indent=1) + "\n")
    (out / "rows.txt").write_text(rows_text(run))
    wins = windows(run)
    with (out / "clients.log").open("w") as f:
        for log in sorted(run.glob("workloads/java-s*/stderr.log")):
            f.write(f"== {log.parent.name}\n")
            f.writelines(line + "\n" for line in lines(log, CLIENT, wins))
    with (out / "brokers.log").open("w") as f:
        for log in sorted((run / "logs").glob("kafka-*.log")):
            f.write(f"== {log.name}\n")
            f.writelines(line + "\n" for line in lines(log, BROKER, wins))


if __name__ == "__main__":
    main(Path(sys.argv[1]), Path(sys.argv[2]))
