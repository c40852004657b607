"""`harness compare` of two variants with repeats, timed, and whether the difference is called.

    .venv/bin/python benchmarks/compare_bench.py                 # leader-isolation, acks=1 vs all, --repeat 3

Measures (issue 15): the wall time of the whole compare (and per run, from each run's
phases.json), and whether the acks=1 vs acks=all difference in `lost` is called in
every repeat: per repeat k, acks=1 run k lost > 0 and acks=all run k lost == 0 (so the
pairwise call holds for each seed, not only for the medians), and whether the compare
itself called it over the spreads. Results: benchmarks/results/compare_bench-<time>.json.
"""
from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def per_repeat(doc: dict, zero: str, nonzero: str, kind: str) -> list[dict]:
    """For each repeat: that repeat's count in both variants and whether the call holds."""
    runs = {(r["variant"], r["repeat"]): r for v in doc["variants"] for r in v["runs"]}
    out = []
    for k in range(doc["repeat"]):
        a = runs.get((nonzero, k), {}).get("metrics", {}).get(f"anomaly.{kind}")
        b = runs.get((zero, k), {}).get("metrics", {}).get(f"anomaly.{kind}")
        out.append({"repeat": k, nonzero: a, zero: b,
                    "called": isinstance(a, int) and isinstance(b, int) and a > 0 and b == 0})
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--scenario", default="leader-isolation")
    ap.add_argument("--vary", default="producer.acks=1,all")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--kind", default="lost", help="the anomaly kind whose difference is checked")
    args = ap.parse_args()
    out_dir = Path(tempfile.mkdtemp(prefix="compare-bench-"))
    t0 = time.monotonic()
    proc = subprocess.run([sys.executable, "-m", "harness.cli", "compare", args.scenario, "--vary", args.vary,
                           "--repeat", str(args.repeat), "--plain", "--compares-dir", str(out_dir)],
                          capture_output=True, text=True, cwd=REPO, timeout=7200)
    wall = time.monotonic() - t0
    (compare_dir,) = list(out_dir.iterdir())
    doc = json.loads((compare_dir / "compare.json").read_text())
    key, values = args.vary.split("=", 1)
    nonzero, zero = (f"{key}={v}" for v in values.split(",")[:2])
    repeats = per_repeat(doc, zero, nonzero, args.kind)
    run_walls = []
    for v in doc["variants"]:
        for r in v["runs"]:
            phases = json.loads((Path(r["run_dir"]) / "phases.json").read_text())
            end = max(p["end_us"] for p in phases if p.get("end_us"))
            run_walls.append(round((end - phases[0]["start_us"]) / 1e6, 1))
    result = {"scenario": args.scenario, "vary": args.vary, "repeat": args.repeat, "exit": proc.returncode,
              "wall_s": round(wall, 1), "run_wall_s": run_walls, "compare_dir": str(compare_dir),
              "per_repeat": repeats, "called_every_repeat": all(r["called"] for r in repeats),
              "called_over_spreads": any(d["metric"] == f"anomaly.{args.kind}" for d in doc["differences"])}
    print(json.dumps(result, indent=2))
    results = REPO / "benchmarks" / "results"
    results.mkdir(exist_ok=True)
    stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
    (results / f"compare_bench-{stamp}.json").write_text(json.dumps(result, indent=2) + "\n")
    return 0 if result["called_every_repeat"] else 1


if __name__ == "__main__":
    sys.exit(main())
