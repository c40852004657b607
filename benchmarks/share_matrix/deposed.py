"""A run's ShareFetch answers with records that a Java share member got from a broker
that was no longer the partition's leader, by the leader changes the run's observer
saw (RESULTS, 2026-11-27: a deposed share-partition leader delivers an accepted record).
Reads the members' client logs (ShareConsumeRequestManager at DEBUG); one line per
such answer. The observer polls metadata, so a change is seen a moment late: an answer
from the old leader within that moment is missed; an answer from the new leader within
it (the next change the observer saw names the answering node) is not counted.

    PYTHONPATH=$PWD .venv/bin/python benchmarks/share_matrix/deposed.py runs/<run>
"""
from __future__ import annotations

import datetime
import json
import re
import sys
from pathlib import Path

import pyarrow.parquet as pq

NODE = re.compile(r"^\[(\S+ \S+)\] DEBUG .*Completed ShareFetch request from node (\d+)")
DATA = re.compile(r"^\[(\S+ \S+)\] DEBUG .*ShareFetch for partition \S+:(\S+)-(\d+) returned fetch data "
                  r"PartitionData\(partitionIndex=\d+, errorCode=(\d+).*records=MemoryRecords\(size=(\d+)")


def leader_changes(run: Path) -> dict[tuple[str, int], list[tuple[int, int]]]:
    """(topic, partition) -> [(when, leader)] in time order."""
    out: dict[tuple[str, int], list[tuple[int, int]]] = {}
    events = pq.read_table(run / "history" / "events").to_pylist()
    for e in sorted(events, key=lambda e: e["ts_us"]):
        if e["kind"] == "observe" and e["name"] == "leader":
            d = json.loads(e["detail"])
            out.setdefault((d["topic"], d["partition"]), []).append((e["ts_us"], d["leader"]))
    return out


def leader_at(changes: list[tuple[int, int]], ts: float) -> int | None:
    return next((leader for t, leader in reversed(changes) if t <= ts), None)


def next_leader(changes: list[tuple[int, int]], ts: float) -> int | None:
    """The leader of the first change the observer saw after ts."""
    return next((leader for t, leader in changes if t > ts), None)


def _us(stamp: str) -> float:
    t = datetime.datetime.strptime(stamp, "%Y-%m-%d %H:%M:%S,%f")
    return t.replace(tzinfo=datetime.UTC).timestamp() * 1e6


def deposed_answers(run: Path) -> list[str]:
    changes = leader_changes(run)
    out = []
    for log in sorted(run.glob("workloads/java-*/stderr.log")):
        node = None
        for line in log.open(errors="replace"):
            if m := NODE.match(line):
                node = int(m.group(2))
            elif (m := DATA.match(line)) and node is not None:
                topic, p, code, size = m.group(2), int(m.group(3)), int(m.group(4)), int(m.group(5))
                seen = changes.get((topic, p), [])
                lead = leader_at(seen, _us(m.group(1)))
                # the new leader answering before the observer saw it elected is not deposed
                late = next_leader(seen, _us(m.group(1))) == node
                if code == 0 and size > 0 and lead is not None and lead != node and not late:
                    out.append(f"{log.parent.name[5:]} {m.group(1)} {topic}-{p} from node {node}, "
                               f"leader then {lead}, {size} bytes")
    return out


if __name__ == "__main__":
    for run_dir in sys.argv[1:]:
        found = deposed_answers(Path(run_dir))
        print(f"{run_dir}: {len(found)}")
        for line in found:
            print("  " + line)
