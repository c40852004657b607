"""Verification time per run inside a suite (issue 14: ≤ 10 s for a run of up to 1 M
records), read from each run's own phases.json and summary.

    .venv/bin/python benchmarks/suite_verify_bench.py --suite benchmarks/suite-verify-1m --repeat 3
    .venv/bin/python benchmarks/suite_verify_bench.py --suite-dir suites/claims-…   # a suite already run

Per run: records produced and consumed, the `verify` phase's seconds (one Spark
session serves the whole suite, so only the first run pays the JVM's start), and the
suite's wall time. Results: benchmarks/results/suite_verify_bench-<time>.json.
"""
from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def run_suite(suite: str, repeat: int, suites_dir: Path) -> tuple[Path, float]:
    t0 = time.monotonic()
    cmd = [sys.executable, "-m", "harness.cli", "suite", suite, "--repeat", str(repeat),
           "--plain", "--suites-dir", str(suites_dir)]
    subprocess.run(cmd, cwd=REPO, check=False, stdout=subprocess.DEVNULL)
    return max(suites_dir.iterdir(), key=lambda d: d.stat().st_mtime), time.monotonic() - t0


def verify_times(suite_dir: Path) -> list[dict]:
    rows = []
    for phases_file in sorted(suite_dir.glob("*/phases.json")):
        run = phases_file.parent
        phases = {p["name"]: p for p in json.loads(phases_file.read_text())}
        v = phases.get("verify")
        summary_file = run / "report" / "summary.json"
        if v is None or v["end_us"] is None or not summary_file.exists():
            continue
        counts = json.loads(summary_file.read_text())["counts"]
        rows.append({"run": run.name, "scenario": phases["validate"]["detail"]["scenario"],
                     "sent": counts["sent"], "consumed": counts["consumed"],
                     "verify_s": round((v["end_us"] - v["start_us"]) / 1e6, 2)})
    return rows


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--suite", help="a suite to run (built-in name, YAML file or folder)")
    ap.add_argument("--suite-dir", help="a suite already run: only read its runs")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--suites-dir", default=str(REPO / "suites"))
    args = ap.parse_args()
    wall = None
    if args.suite_dir:
        suite_dir = Path(args.suite_dir)
    else:
        Path(args.suites_dir).mkdir(parents=True, exist_ok=True)
        suite_dir, wall = run_suite(args.suite, args.repeat, Path(args.suites_dir))
    rows = verify_times(suite_dir)
    for r in rows:
        print(f"{r['scenario']:<45} sent {r['sent']:>9,} consumed {r['consumed']:>9,} verify {r['verify_s']:6.1f} s")
    later = [r["verify_s"] for r in rows[1:]]        # the first run also starts Spark's JVM
    out = {"suite_dir": str(suite_dir), "wall_s": None if wall is None else round(wall, 1), "runs": rows,
           "verify_s_median_after_first": statistics.median(later) if later else None,
           "verify_s_max_after_first": max(later) if later else None}
    print(json.dumps({k: v for k, v in out.items() if k != "runs"}))
    res = REPO / "benchmarks" / "results" / f"suite_verify_bench-{time.strftime('%Y%m%dT%H%M%SZ', time.gmtime())}.json"
    res.write_text(json.dumps(out, indent=1))
    print(f"results: {res}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
