"""`harness run` of a scenario end to end, timed from its own phases.json.

    .venv/bin/python benchmarks/run_bench.py --runs 2            # the default scenario
    .venv/bin/python benchmarks/run_bench.py --scenario quick

Targets (issue 13): the default scenario ≤ 3 min on this machine, of which everything
that is not the workload's own duration (images check, cluster up, topics, drain, stop,
verify, report) ≤ 60 s. Per run: wall time, each phase's seconds and share, and the
overhead = wall − workload.duration_s. Results: benchmarks/results/run_bench-<time>.json.
"""
from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from harness.scenario import load_scenario  # noqa: E402


def one_run(scenario: str | None, runs_dir: Path) -> dict:
    t0 = time.monotonic()
    cmd = [sys.executable, "-m", "harness.cli", "run", "--runs-dir", str(runs_dir), "--plain"]
    proc = subprocess.run(cmd + ([scenario] if scenario else []), capture_output=True, text=True,
                          cwd=REPO, timeout=1800)
    wall = time.monotonic() - t0
    run_dir = max(runs_dir.iterdir(), key=lambda d: d.stat().st_mtime)
    phases = json.loads((run_dir / "phases.json").read_text())
    seconds = {p["name"]: round((p["end_us"] - p["start_us"]) / 1e6, 2) for p in phases}
    return {"exit": proc.returncode, "wall_s": round(wall, 1), "run_dir": str(run_dir),
            "phases_s": seconds,
            "share": {k: round(v / wall, 3) for k, v in seconds.items()}}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--scenario", default=None, help="file or built-in name (default: default)")
    ap.add_argument("--runs", type=int, default=2)
    args = ap.parse_args()
    duration = load_scenario(args.scenario).workload.duration_s
    runs_dir = Path(tempfile.mkdtemp(prefix="run-bench-"))
    rows = []
    for i in range(args.runs):
        row = one_run(args.scenario, runs_dir)
        row["overhead_s"] = round(row["wall_s"] - duration, 1)
        rows.append(row)
        print(f"run {i}: exit {row['exit']}, wall {row['wall_s']} s, overhead {row['overhead_s']} s")
        for name, s in row["phases_s"].items():
            print(f"    {name:<16} {s:7.2f} s  {row['share'][name]:6.1%}")
    summary = {"scenario": args.scenario or "default", "workload_duration_s": duration,
               "median_wall_s": statistics.median(r["wall_s"] for r in rows),
               "median_overhead_s": statistics.median(r["overhead_s"] for r in rows),
               "runs": rows}
    out = REPO / "benchmarks" / "results" / f"run_bench-{time.strftime('%Y%m%dT%H%M%SZ', time.gmtime())}.json"
    out.write_text(json.dumps(summary, indent=2))
    print(f"median wall {summary['median_wall_s']} s, median overhead "
          f"{summary['median_overhead_s']} s; results: {out}")
    return 0 if all(r["exit"] == 0 for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
