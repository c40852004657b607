"""kill -9 of `harness run` at random moments: after `harness gc` nothing is left
(no container, network, mount, iptables rule or paused container), and every history
left behind is readable by `harness verify` (a verdict, or a clear "unknown").

    .venv/bin/python benchmarks/kill9_bench.py --rounds 20 --seed 1

Each round starts `harness run quick` in its own process group, kills the whole group
with SIGKILL at a seeded random moment, runs `harness gc`, looks for leftovers and
runs `harness verify` on the run dir. Results: benchmarks/results/kill9_bench-<time>.json
and a table on stdout (record it in benchmarks/RESULTS.md).
"""
from __future__ import annotations

import argparse
import json
import os
import random
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from harness.run.orphans import orphan_spark_drivers  # noqa: E402

HARNESS = [sys.executable, "-m", "harness.cli"]
MOUNT_ROOT = Path(os.environ.get("HARNESS_MOUNT_ROOT", "/var/lib/kafka-harness/mounts"))


def leftovers(run_id: str) -> list[str]:
    """What one run may have left: its labelled containers and networks (paused ones
    too), its log-dir mounts, host iptables rules, an orphaned Spark driver JVM."""
    def lines(cmd: list[str]) -> list[str]:
        out = subprocess.run(cmd, capture_output=True, text=True, timeout=60).stdout
        return [x for x in out.splitlines() if x.strip()]
    label = f"label=harness.run-id={run_id}"
    found = [f"container {c}" for c in lines(["docker", "ps", "-aq", "--filter", label])]
    found += [f"network {n}" for n in lines(["docker", "network", "ls", "-q", "--filter", label])]
    found += [f"paused {c}" for c in lines(["docker", "ps", "-q", "--filter", label,
                                            "--filter", "status=paused"])]
    found += [f"mount {line.split()[1]}" for line in Path("/proc/mounts").read_text().splitlines()
              if str(MOUNT_ROOT / run_id) in line]
    # iptables rules live in each container's network namespace: none can outlive its
    # container, but a rule in the host's own tables would; the harness never adds one.
    found += [f"host iptables {r}" for r in lines(["iptables", "-w", "-S"]) if "HARNESS" in r]
    found += [f"orphaned Spark driver JVM {pid}" for pid in orphan_spark_drivers()]
    return found


def current_phase(runs: Path) -> str | None:
    for d in runs.iterdir() if runs.exists() else []:
        try:
            records = json.loads((d / "phases.json").read_text())
        except (OSError, ValueError):
            return "before phases.json"
        open_ = [r["name"] for r in records if r["outcome"] is None]
        return open_[-1] if open_ else (records[-1]["name"] + " (between phases)"
                                        if records else "start")
    return "before the run dir"


def one_round(i: int, at_s: float, base: Path) -> dict:
    runs = base / f"round-{i}"
    proc = subprocess.Popen([*HARNESS, "run", "quick", "--runs-dir", str(runs), "--plain"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            start_new_session=True, cwd=REPO)
    time.sleep(at_s)
    phase = current_phase(runs)
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()
    time.sleep(1.0)            # workers notice their parent is gone and exit by themselves
    gc = subprocess.run([*HARNESS, "gc"], capture_output=True, text=True, timeout=600, cwd=REPO)
    run_dirs = [d for d in runs.iterdir()] if runs.exists() else []
    left = [x for d in run_dirs for x in leftovers(d.name)]
    verdicts = []
    for d in run_dirs:
        v = subprocess.run([*HARNESS, "verify", str(d)], capture_output=True, text=True,
                           timeout=900, cwd=REPO)
        verdicts.append({"exit": v.returncode, "says": (v.stdout + v.stderr).strip().splitlines()[:2],
                         "traceback": "Traceback" in v.stderr,
                         # a traceback's cause is at its end: keep it to explain a failed round
                         "stderr_tail": v.stderr.strip().splitlines()[-12:] if "Traceback" in v.stderr else []})
    return {"round": i, "kill_at_s": round(at_s, 1), "phase": phase, "gc": gc.stdout.strip(),
            "leftovers": left, "verify": verdicts}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=20)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--max-s", type=float, default=90.0, help="latest kill moment")
    args = ap.parse_args()
    rng = random.Random(args.seed)
    base = Path(tempfile.mkdtemp(prefix="kill9-"))
    rows = []
    for i in range(args.rounds):
        row = one_round(i, rng.uniform(0.5, args.max_s), base)
        rows.append(row)
        ok = not row["leftovers"] and all(v["exit"] in (0, 1, 2) and not v["traceback"]
                                          for v in row["verify"])
        print(f"{i:2d} kill at {row['kill_at_s']:5.1f} s in {row['phase']:<28} "
              f"leftovers {len(row['leftovers'])} verify "
              f"{[v['exit'] for v in row['verify']]} {'ok' if ok else 'FAIL'}", flush=True)
    out = REPO / "benchmarks" / "results" / f"kill9_bench-{time.strftime('%Y%m%dT%H%M%SZ', time.gmtime())}.json"
    out.write_text(json.dumps({"rounds": rows, "seed": args.seed}, indent=2))
    bad = [r for r in rows if r["leftovers"] or any(v["traceback"] for v in r["verify"])]
    print(f"{len(rows) - len(bad)} of {len(rows)} rounds clean; results: {out}")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
