"""Verify time and peak memory at 1 M and 10 M produced records, against DuckDB.

For each size: write a synthetic history (benchmarks/synthetic.py, anomalies of
every kind injected) under benchmarks/data/ (reused when present), then run
`harness verify` and the DuckDB reference (benchmarks/duckdb_reference.py) each
as a subprocess, sampling the resident memory of the whole process tree
(python + the Spark driver JVM) every 0.2 s, and the machine's CPU steal. With
--rounds N each side runs N times, alternating which goes first, and the table
shows the medians (this machine's noise moves single runs by ±20 %). Prints a
Markdown table and writes JSON next to this file (benchmarks/results/).

    .venv/bin/python benchmarks/verify_bench.py --records 1000000
    .venv/bin/python benchmarks/verify_bench.py --records 1000000 10000000
    .venv/bin/python benchmarks/verify_bench.py --records 10000000 --rounds 3
    .venv/bin/python benchmarks/verify_bench.py --records 10000000 --rounds 3 \
        --baseline /tmp/old     # also time another checkout (git worktree add /tmp/old REV)
    .venv/bin/python benchmarks/verify_bench.py --run-dir runs/RUN --rounds 3 --baseline /tmp/old
    .venv/bin/python benchmarks/verify_bench.py --records 100000 --rounds 3 --baseline /tmp/old --cold

`harness verify` of this checkout runs on the warm local Spark Connect server (the
default; spark_reports/connect_server.py): the server is started before the first
round and each timed verify finds it warm. With --cold, the server is stopped before
each of this checkout's verifies, so each pays for starting it (a first verify).
--spark-mode local times the in-process session instead (no server).

With --baseline DIR the rounds also run `harness verify` from that checkout (its
code on PYTHONPATH, this checkout's .venv), in the same rotation, and report its
time beside this checkout's: a code change measured in one run of the machine.
--baseline-mode local (the default) runs its verifies in-process, a fresh JVM each;
--baseline-mode server on a local Connect server of its own (state in a directory
apart, so the two checkouts never share a server), warm or, with --cold, started
for each verify.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from synthetic import INJECTABLE, SyntheticSpec, generate  # noqa: E402

PY = sys.executable
PAGE = os.sysconf("SC_PAGE_SIZE")


TICK = os.sysconf("SC_CLK_TCK")


def _tree_rss(root: int, cpu: dict[int, float] | None = None) -> int:
    """Sum of RSS over `root` and all its descendants, from /proc; records each
    process's user+system CPU seconds into `cpu` (the last value seen per pid)."""
    children: dict[int, list[int]] = {}
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            with open(f"/proc/{d}/stat") as f:
                ppid = int(f.read().rsplit(")", 1)[1].split()[1])
            children.setdefault(ppid, []).append(int(d))
        except (OSError, ValueError, IndexError):
            continue
    total, todo = 0, [root]
    while todo:
        pid = todo.pop()
        try:
            with open(f"/proc/{pid}/statm") as f:
                total += int(f.read().split()[1]) * PAGE
            if cpu is not None:
                with open(f"/proc/{pid}/stat") as f:
                    fields = f.read().rsplit(")", 1)[1].split()
                cpu[pid] = (int(fields[11]) + int(fields[12])) / TICK
        except (OSError, ValueError, IndexError):
            pass
        todo += children.get(pid, [])
    return total


def _steal_seconds() -> float:
    """The machine's CPU steal so far (all CPUs), from /proc/stat."""
    with open("/proc/stat") as f:
        return int(f.readline().split()[8]) / TICK


def run_measured(cmd: list[str], env: dict | None = None, cwd: Path = ROOT) -> dict:
    t0, steal0 = time.monotonic(), _steal_seconds()
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env={**os.environ, **(env or {})}, cwd=cwd)
    peak = [0]
    cpu: dict[int, float] = {}
    done = threading.Event()
    load_before = os.getloadavg()[0]

    def sample():
        while not done.is_set():
            peak[0] = max(peak[0], _tree_rss(proc.pid, cpu))
            done.wait(0.2)

    th = threading.Thread(target=sample, daemon=True)
    th.start()
    out, err = proc.communicate()
    done.set()
    th.join()
    return {"rc": proc.returncode, "seconds": round(time.monotonic() - t0, 2),
            "cpu_seconds": round(sum(cpu.values()), 1),
            "load_avg_1m": [round(load_before, 1), round(os.getloadavg()[0], 1)],
            "steal_seconds": round(_steal_seconds() - steal0, 1),
            "peak_rss_mib": round(peak[0] / 2**20), "stdout": out, "stderr": err[-3000:]}


def synthetic(records: int, data: Path, regenerate: bool) -> tuple[Path, dict]:
    """The synthetic history of that many records (written once) and its injected truth."""
    run_dir = data / f"synthetic-{records}"
    each = max(3, records // 10_000)
    spec = SyntheticSpec(records=records, producers=8, partitions=12, rate_per_s=20_000,
                         inject={k: each for k in INJECTABLE}, faults=3, seed=11)
    truth_file = run_dir / "truth.json"
    if regenerate or not truth_file.exists():
        t = time.monotonic()
        truth = generate(run_dir, spec)
        truth["generate_seconds"] = round(time.monotonic() - t, 1)
        truth_file.write_text(json.dumps(truth))
    return run_dir, json.loads(truth_file.read_text())


SPARK_SIDE = {"cold": False, "mode": "server"}
# The baseline checkout's verifies: in-process (local, a fresh JVM per verify) or on a
# local Connect server of its own (its state apart from this checkout's server's).
BASELINE_SIDE = {"mode": "local",
                 "state": Path(os.environ.get("TMPDIR", "/tmp")) / f"verify-bench-baseline-{os.getpid()}"}


def _stop_server(checkout: Path = ROOT, env: dict | None = None) -> None:
    subprocess.run([PY, "-m", "harness.cli", "spark", "stop"], cwd=checkout, check=True,
                   capture_output=True, env={**os.environ, "PYTHONPATH": str(checkout),
                                             **(env or {})})


def _baseline_env(baseline: Path) -> dict:
    return {"PYTHONPATH": str(baseline), "HARNESS_STATE": str(BASELINE_SIDE["state"])}


def _server_memory() -> dict:
    from spark_reports.connect_server import status
    s = status()
    return (s or {}).get("memory", {})


def _server_cpu(state_home: Path | None = None) -> float | None:
    """user+system CPU seconds of the running server's JVM (None: no server); that of
    the server whose state is under state_home (a HARNESS_STATE) when given."""
    from spark_reports.connect_server import read_state
    saved = os.environ.get("HARNESS_STATE")
    if state_home is not None:
        os.environ["HARNESS_STATE"] = str(state_home)
    try:
        state = read_state()
    finally:
        if state_home is not None:
            os.environ.pop("HARNESS_STATE")
            if saved is not None:
                os.environ["HARNESS_STATE"] = saved
    if state is None or not state.alive():
        return None
    fields = Path(f"/proc/{state.jvm_pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def bench(run_dir: Path, truth: dict | None, n_rounds: int = 1,
          baseline: Path | None = None) -> dict:
    """Time `harness verify RUN_DIR` (this checkout, DuckDB, the baseline) n_rounds times.
    truth: the injected anomalies (None for a stored real run: no such truth)."""
    rounds = []
    if SPARK_SIDE["mode"] == "server" and not SPARK_SIDE["cold"]:
        _run_side("spark", run_dir)         # the server started and warmed, untimed
    if baseline and BASELINE_SIDE["mode"] == "server" and not SPARK_SIDE["cold"]:
        _run_side("baseline", run_dir, baseline)     # the baseline's server likewise
    for i in range(n_rounds):
        # alternate which side runs first, so drift in the machine's speed is shared
        sides = ["spark", "duckdb"] + (["baseline"] if baseline else [])
        sides = sides if i % 2 == 0 else sides[::-1]
        got = {side: _run_side(side, run_dir, baseline) for side in sides}
        rounds.append(_round(truth, run_dir, got["spark"], got["duckdb"]))
        if baseline:
            b = got["baseline"]
            rounds[-1]["baseline"] = {
                "seconds": b["seconds"], "cpu_seconds": b["cpu_seconds"],
                "peak_rss_mib": b["peak_rss_mib"], "steal_seconds": b["steal_seconds"],
                "matches_injected": _matches(b["summary"], truth),
                "ratio": round(b["seconds"] / got["duckdb"]["seconds"], 2)}
    if n_rounds == 1:
        out = rounds[0]
        if baseline:
            out["baseline_seconds"] = out["baseline"]["seconds"]
            out["baseline_ratio"] = out["baseline"]["ratio"]
        return out
    # the medians of the rounds (each round's own numbers are kept under "rounds")
    out = dict(min(rounds, key=lambda r: abs(r["ratio"] - statistics.median(
        x["ratio"] for x in rounds))))
    for k in ("spark_seconds", "duckdb_seconds", "spark_cpu_seconds", "duckdb_cpu_seconds",
              "ratio", "cpu_ratio"):
        out[k] = round(statistics.median(r[k] for r in rounds), 2)
    if baseline:
        out["baseline_seconds"] = round(statistics.median(
            r["baseline"]["seconds"] for r in rounds), 2)
        out["baseline_ratio"] = round(statistics.median(r["baseline"]["ratio"] for r in rounds), 2)
    out["identical_counts"] = all(r["identical_counts"] for r in rounds)
    out["matches_injected"] = (None if truth is None else
                               all(r["matches_injected"] for r in rounds))
    out["rounds"] = [{k: v for k, v in r.items() if k not in ("spark_counts", "duckdb_counts")}
                     for r in rounds]
    return out


def _run_side(side: str, run_dir: Path, baseline: Path | None = None) -> dict:
    if side in ("spark", "baseline"):
        cmd, env, cwd = [PY, "-m", "harness.cli", "verify", str(run_dir),
                         "--spark-mode", SPARK_SIDE["mode"]], {"PYTHONPATH": str(ROOT)}, ROOT
        if side == "spark" and SPARK_SIDE["cold"]:
            _stop_server()
        server_cpu0 = _server_cpu() if side == "spark" else None
        baseline_server = side == "baseline" and BASELINE_SIDE["mode"] == "server"
        if side == "baseline":
            # the other checkout's modules first (its folder is the working directory)
            cmd = [PY, "-m", "harness.cli", "verify", str(run_dir),
                   "--spark-mode", BASELINE_SIDE["mode"]]
            env, cwd = _baseline_env(baseline), baseline
            if baseline_server and SPARK_SIDE["cold"]:
                _stop_server(baseline, env)
            server_cpu0 = _server_cpu(BASELINE_SIDE["state"]) if baseline_server else None
        got = run_measured(cmd, env, cwd)
        if got["rc"] not in (0, 1):
            raise SystemExit(f"harness verify failed (rc {got['rc']}):\n{got['stderr']}")
        got["summary"] = json.loads((run_dir / "report" / "summary.json").read_text())
        if side == "spark" and SPARK_SIDE["mode"] == "server":
            got["server_memory"] = _server_memory()
            if server_cpu0 is not None:
                # a warm server is not in the verify's process tree: its CPU added here
                got["cpu_seconds"] = round(got["cpu_seconds"] + _server_cpu() - server_cpu0, 1)
        if baseline_server and server_cpu0 is not None:
            got["cpu_seconds"] = round(got["cpu_seconds"] + _server_cpu(BASELINE_SIDE["state"])
                                       - server_cpu0, 1)
        return got
    got = run_measured([PY, str(ROOT / "benchmarks/duckdb_reference.py"), str(run_dir)])
    if got["rc"] != 0:
        raise SystemExit(f"duckdb reference failed:\n{got['stderr']}")
    return got


def _matches(summary: dict, truth: dict | None) -> bool | None:
    return None if truth is None else summary["anomalies"] == truth["anomalies"]


def _round(truth: dict | None, run_dir: Path, spark: dict, duck: dict) -> dict:
    summary = spark["summary"]
    ref = json.loads(duck["stdout"])
    spark_counts = {**{k: summary["counts"][k] for k in ref["counts"]}, **summary["anomalies"]}
    duck_counts = {**ref["counts"], **ref["anomalies"]}
    return {
        "run_dir": str(run_dir),
        "consumed_rows": summary["counts"]["consumed"], "produced_rows": summary["counts"]["sent"],
        "spark_seconds": spark["seconds"], "spark_peak_rss_mib": spark["peak_rss_mib"],
        "spark_verify_seconds_inside": summary["verify_seconds"],
        "spark_steps": summary.get("step_seconds"),
        "duckdb_seconds": duck["seconds"], "duckdb_peak_rss_mib": duck["peak_rss_mib"],
        "duckdb_query_seconds": ref["seconds"],
        "spark_cpu_seconds": spark["cpu_seconds"], "duckdb_cpu_seconds": duck["cpu_seconds"],
        # the server's JVM is not in the verify's process tree: its memory from /proc
        "server_memory_mib": spark.get("server_memory"),
        "load_avg_1m": {"spark": spark["load_avg_1m"], "duckdb": duck["load_avg_1m"]},
        "steal_seconds": {"spark": spark["steal_seconds"], "duckdb": duck["steal_seconds"]},
        "ratio": round(spark["seconds"] / duck["seconds"], 2),
        "cpu_ratio": round(spark["cpu_seconds"] / max(duck["cpu_seconds"], 0.1), 2),
        "identical_counts": spark_counts == duck_counts,
        "matches_injected": _matches(summary, truth),
        "spark_counts": spark_counts, "duckdb_counts": duck_counts,
        "generate_seconds": (truth or {}).get("generate_seconds"),
    }


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--records", type=int, nargs="+", default=[1_000_000])
    ap.add_argument("--data", type=Path, default=ROOT / "benchmarks" / "data")
    ap.add_argument("--regenerate", action="store_true")
    ap.add_argument("--rounds", type=int, default=1,
                    help="runs of each side per size, alternating which goes first; the "
                         "table shows the medians")
    ap.add_argument("--baseline", type=Path, default=None,
                    help="another checkout to time in the same rounds (e.g. a git worktree of "
                         "the previous commit)")
    ap.add_argument("--run-dir", type=Path, action="append", default=[],
                    help="a stored run to verify instead of the synthetic histories (no "
                         "injected truth: = injected is blank); repeatable")
    ap.add_argument("--cold", action="store_true",
                    help="stop the local Spark Connect server before each of this checkout's "
                         "verifies (each pays for starting it)")
    ap.add_argument("--spark-mode", choices=("server", "local"), default="server")
    ap.add_argument("--baseline-mode", choices=("server", "local"), default="local",
                    help="the baseline's verifies in-process (a fresh JVM each) or on a local "
                         "Connect server of its own (warm, or with --cold started each time)")
    a = ap.parse_args()
    SPARK_SIDE.update(cold=a.cold, mode=a.spark_mode)
    BASELINE_SIDE["mode"] = a.baseline_mode
    rows = []
    histories = ([(d.resolve(), None) for d in a.run_dir] if a.run_dir else
                 [synthetic(n, a.data.resolve(), a.regenerate) for n in a.records])
    for run_dir, truth in histories:
        r = bench(run_dir, truth, a.rounds, a.baseline.resolve() if a.baseline else None)
        rows.append(r)
        print(json.dumps({k: v for k, v in r.items()
                          if not k.endswith("_counts") and k != "rounds"}), flush=True)
    if a.baseline and a.baseline_mode == "server":
        _stop_server(a.baseline.resolve(), _baseline_env(a.baseline.resolve()))
    out = ROOT / "benchmarks" / "results"
    out.mkdir(exist_ok=True)
    stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
    (out / f"verify_bench-{stamp}.json").write_text(json.dumps(rows, indent=2))
    print("\n| produced | consumed rows | harness verify wall s (CPU s) | peak RSS MiB | "
          "DuckDB wall s (CPU s) | DuckDB peak RSS MiB | ratio wall (CPU) | counts identical "
          "| = injected | load avg | CPU steal s |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        print(f"| {r['produced_rows']:,} | {r['consumed_rows']:,} | {r['spark_seconds']} "
              f"({r['spark_cpu_seconds']}) | {r['spark_peak_rss_mib']} | {r['duckdb_seconds']} "
              f"({r['duckdb_cpu_seconds']}) | {r['duckdb_peak_rss_mib']} | {r['ratio']}x "
              f"({r['cpu_ratio']}x) | {r['identical_counts']} | {r['matches_injected']} | "
              f"{r['load_avg_1m']['spark'][0]}–{r['load_avg_1m']['spark'][1]} | "
              f"{r['steal_seconds']['spark']} / {r['steal_seconds']['duckdb']} |")
        if "baseline_seconds" in r:
            print(f"| baseline checkout | | {r['baseline_seconds']} s | | | | "
                  f"{r['baseline_ratio']}x | | | | |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
