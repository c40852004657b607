"""Time one view builder against others in one warm Spark session, alternating.

    .venv/bin/python benchmarks/view_bench.py RUN_DIR ROUNDS variant.py [variant.py ...]

Each variant file defines `build(spark, frames, scanned, materialize)`, which builds
(and writes) a view from the history's frames (spark_reports.tables.read_tables) and
returns something printable (e.g. its observed sizes, to check the variants agree).
`materialize` is reconcile.Scratch(...).materialize on a folder of /tmp per variant.
Round 0 warms the session and is not counted; every round alternates the order.
Per build: wall seconds and CPU seconds of this process and its children (python +
the driver JVM, every thread: JIT and GC included). EVLOG=1 writes Spark's event
log to /tmp/evlog (per-stage task CPU). Prints the medians; with --json FILE also
writes every build's numbers there.
"""
from __future__ import annotations

import importlib.util
import json
import os
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from spark_reports.scratch import Scratch  # noqa: E402
from spark_reports.session import spark_session  # noqa: E402
from spark_reports.storage import RunLocation  # noqa: E402
from spark_reports.tables import read_tables  # noqa: E402
from spark_reports.validate import check_files, check_values  # noqa: E402


def tree_cpu() -> float:
    """user+system CPU seconds of this process and its direct children (the JVM)."""
    me, tick, total = os.getpid(), os.sysconf("SC_CLK_TCK"), 0.0
    for d in filter(str.isdigit, os.listdir("/proc")):
        try:
            st = Path(f"/proc/{d}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(d) == me or int(st[1]) == me:
            total += (int(st[11]) + int(st[12])) / tick
    return total


def load(path: str):
    spec = importlib.util.spec_from_file_location(Path(path).stem, path)
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod
    spec.loader.exec_module(mod)
    return mod.build


def main() -> int:
    args = sys.argv[1:]
    out_json = None
    if "--json" in args:
        i = args.index("--json")
        out_json, args = args[i + 1], args[:i] + args[i + 2:]
    run_dir, rounds, paths = args[0], int(args[1]), args[2:]
    variants = {Path(p).stem: load(p) for p in paths}
    conf = ({"spark.eventLog.enabled": "true", "spark.eventLog.dir": "file:///tmp/evlog"}
            if os.environ.get("EVLOG") else None)
    spark, _ = spark_session(None, extra_conf=conf)
    loc = RunLocation.of(run_dir)
    history = check_files(loc)
    scanned = check_values(loc, history)
    frames = read_tables(spark, loc, history)
    got: dict[str, list] = {k: [] for k in variants}
    try:
        for r in range(rounds + 1):
            for name in (list(variants) if r % 2 == 0 else list(variants)[::-1]):
                scratch = Scratch(spark, RunLocation.of(f"/tmp/view_bench-{name}"))
                t, c = time.monotonic(), tree_cpu()
                res = variants[name](spark, frames, scanned, scratch.materialize)
                row = {"round": r, "seconds": round(time.monotonic() - t, 2),
                       "cpu_seconds": round(tree_cpu() - c, 1), "load_avg_1m": os.getloadavg()[0]}
                if r:
                    got[name].append(row)
                print(name, row, res, flush=True)
    finally:
        spark.stop()
    summary = {k: {"median_s": statistics.median(x["seconds"] for x in v),
                   "median_cpu_s": statistics.median(x["cpu_seconds"] for x in v), "runs": v}
               for k, v in got.items()}
    for k, v in summary.items():
        print(k, "median wall", v["median_s"], "median CPU", v["median_cpu_s"])
    if out_json:
        Path(out_json).write_text(json.dumps({"run_dir": run_dir, "variants": summary}, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
