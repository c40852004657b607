"""Verify time inside an already-running Spark session (as a suite verifies its runs),
this checkout against another one, alternating.

    .venv/bin/python benchmarks/warm_verify_bench.py RUN_DIR... --rounds 3 --baseline /tmp/old
    .venv/bin/python benchmarks/warm_verify_bench.py RUN_DIR... --warm OTHER_RUN... --master local[2] --nice

Each side is one process per round: it starts a session the way `harness suite`
does (spark_reports.session.spark_session), verifies the --warm runs (default:
the first RUN_DIR) to warm the JVM (a suite's first run pays that), then verifies every RUN_DIR
`--repeat` times, recording verify_seconds, the step seconds and the CPU seconds of
the process tree (python + the driver JVM) per verify. Rounds alternate which side
goes first. Results: benchmarks/results/warm_verify_bench-<time>.json.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

from verify_bench import _tree_rss

ROOT = Path(__file__).resolve().parents[1]


def _tree_cpu(root: int) -> float:
    """user+system CPU seconds of `root` and its descendants (verify_bench's /proc walk)."""
    cpu: dict[int, float] = {}
    _tree_rss(root, cpu)
    return sum(cpu.values())


def worker(run_dirs: list[str], repeat: int, master: str | None, warm: list[str],
           conf: dict[str, str]) -> list[dict]:
    """In this process: one session, a warm-up verify, then the timed ones."""
    from dataclasses import replace

    from harness.run.judge import stored_judgement
    from spark_reports.session import spark_session
    from verifiers.verify import verify_run

    spark, _ = spark_session(master, extra_conf=conf)
    out = []
    try:
        for d in warm or run_dirs[:1]:
            verify_run(d, replace(stored_judgement(d), html=False), spark=spark)
        for _ in range(repeat):
            for d in run_dirs:
                c0, p0, t0 = _tree_cpu(os.getpid()), time.process_time(), time.monotonic()
                s = verify_run(d, replace(stored_judgement(d), html=False), spark=spark).summary
                out.append({"run_dir": d, "seconds": round(time.monotonic() - t0, 3),
                            "cpu_seconds": round(_tree_cpu(os.getpid()) - c0, 1),
                            "python_cpu_seconds": round(time.process_time() - p0, 1),
                            "verify_seconds": s["verify_seconds"], "counts": s["counts"],
                            "anomalies": s["anomalies"], "steps": s["step_seconds"]})
    finally:
        spark.stop()
    return out


def _side(checkout: Path, args) -> list[dict]:
    cmd = [sys.executable, str(ROOT / "benchmarks" / "warm_verify_bench.py"), "--worker",
           "--repeat", str(args.repeat), *args.run_dirs] + (
        ["--master", args.master] if args.master else []) + (
        ["--warm", *args.warm] if args.warm else []) + [
        x for c in args.conf for x in ("--conf", c)]
    if args.nice:
        cmd = ["nice", "-n", "19", *cmd]
    p = subprocess.run(cmd, cwd=checkout, env={**os.environ, "PYTHONPATH": str(checkout)},
                       capture_output=True, text=True)
    if p.returncode:
        raise SystemExit(f"{checkout}: rc {p.returncode}\n{p.stderr[-3000:]}")
    return json.loads(p.stdout.strip().splitlines()[-1])


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("run_dirs", nargs="+")
    ap.add_argument("--rounds", type=int, default=1)
    ap.add_argument("--repeat", type=int, default=1, help="verifies of each RUN_DIR per round")
    ap.add_argument("--baseline", type=Path, help="another checkout, timed in the same rounds")
    ap.add_argument("--master", help="Spark master (default: the suite's, local[*])")
    ap.add_argument("--nice", action="store_true", help="run the sides under nice -n 19")
    ap.add_argument("--warm", nargs="+", default=[],
                    help="the runs to warm the session with, in order (default: the first "
                         "RUN_DIR; other runs' literals make some queries' code differ, as in "
                         "a suite)")
    ap.add_argument("--conf", action="append", default=[], help="K=V: a Spark setting of the session")
    ap.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args()
    args.run_dirs = [str(Path(d).resolve()) for d in args.run_dirs]
    args.warm = [str(Path(d).resolve()) for d in args.warm]
    if args.worker:
        conf = dict(c.split("=", 1) for c in args.conf)
        print(json.dumps(worker(args.run_dirs, args.repeat, args.master, args.warm, conf)))
        return 0
    sides = {"this": ROOT} | ({"baseline": args.baseline.resolve()} if args.baseline else {})
    rounds = []
    for i in range(args.rounds):
        order = list(sides) if i % 2 == 0 else list(sides)[::-1]
        got = {name: _side(sides[name], args) for name in order}
        rounds.append({"order": order, "load_avg_1m": os.getloadavg()[0], **got})
        for name in order:
            for r in got[name]:
                print(f"round {i + 1} {name:<8} {Path(r['run_dir']).name:<28} "
                      f"{r['seconds']:7.2f} s  {r['cpu_seconds']:6.1f} CPU s "
                      f"({r['python_cpu_seconds']} in Python)", flush=True)
    summary = {}
    for name in sides:
        for d in args.run_dirs:
            xs = [r for rd in rounds for r in rd[name] if r["run_dir"] == d]
            summary[f"{name} {Path(d).name}"] = {
                "median_s": statistics.median(r["seconds"] for r in xs),
                "median_cpu_s": statistics.median(r["cpu_seconds"] for r in xs),
                "n": len(xs)}
    if args.baseline:
        summary["same_counts"] = all(
            a["counts"] == b["counts"] and a["anomalies"] == b["anomalies"]
            for rd in rounds for a, b in zip(rd["this"], rd["baseline"], strict=True))
    print(json.dumps(summary, indent=1))
    res = ROOT / "benchmarks" / "results" / \
        f"warm_verify_bench-{time.strftime('%Y%m%dT%H%M%SZ', time.gmtime())}.json"
    res.write_text(json.dumps({"args": {k: str(v) for k, v in vars(args).items()},
                               "summary": summary, "rounds": rounds}, indent=1))
    print(f"results: {res}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
