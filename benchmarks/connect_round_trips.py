"""A verify's questions to the Spark Connect server, counted and timed by calling line.

    HARNESS_STATE=/tmp/state PYTHONPATH=$PWD .venv/bin/python benchmarks/connect_round_trips.py RUN_DIR 3

Verifies RUN_DIR N times in this process (no HTML), on the warm local server (the
first verify starts it if none runs), and prints per verify the client's analyses
(`_analyze`: a frame's schema, columns, isStreaming), executions (`_execute_and_fetch`:
jobs, writes, collects) and config reads, each with the line of ours that asked and
the seconds spent waiting (threads overlap, so they add up to more than the wall).
"""
from __future__ import annotations

import collections
import sys
import threading
import time
import traceback
from dataclasses import replace
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import pyspark.sql.connect.client.core as core  # noqa: E402

STATS: dict = collections.defaultdict(lambda: [0, 0.0])
LOCK = threading.Lock()
NOT_OURS = ("/pyspark/", "/threading.py", "/functools.py", "connect_round_trips")


def _site() -> str:
    for fr in reversed(traceback.extract_stack()[:-2]):
        if not any(s in fr.filename for s in NOT_OURS):
            return f"{'/'.join(fr.filename.split('/')[-2:])}:{fr.lineno} {fr.name}"
    return "?"


def _count(name: str) -> None:
    call = getattr(core.SparkConnectClient, name)

    def counted(self, *a, **k):
        t = time.monotonic()
        try:
            return call(self, *a, **k)
        finally:
            with LOCK:
                s = STATS[(name, _site())]
                s[0] += 1
                s[1] += time.monotonic() - t
    setattr(core.SparkConnectClient, name, counted)


def main() -> None:
    for name in ("_analyze", "_execute_and_fetch", "config"):
        _count(name)
    from harness.run.judge import stored_judgement
    from verifiers.verify import verify_run
    run, n = sys.argv[1], int(sys.argv[2]) if len(sys.argv) > 2 else 1
    for i in range(n):
        STATS.clear()
        t = time.monotonic()
        s = verify_run(run, replace(stored_judgement(run), html=False)).summary
        totals = collections.Counter()
        for (name, _), (c, _) in STATS.items():
            totals[name] += c
        print(f"verify {i}: {time.monotonic() - t:.1f} s (inside {s['verify_seconds']} s), "
              f"round trips {dict(totals)}", flush=True)
        for (name, where), (c, sec) in sorted(STATS.items(), key=lambda kv: -kv[1][1]):
            print(f"   {name:20s} {c:4d} {sec:7.2f} s  {where}")


if __name__ == "__main__":
    main()
