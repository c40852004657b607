"""Per-version costs (issue 27): a new version's image, cluster start per line,
`upgrade-check` wall time per pair.

    .venv/bin/python benchmarks/versions_bench.py images 3.8 4.1     # build from nothing
    .venv/bin/python benchmarks/versions_bench.py start 3.6 3.7 … --repeat 2
    .venv/bin/python benchmarks/versions_bench.py upgrade 4.1:4.3 3.8zk:3.9 4.1:4.3rb …

images: `harness images build --version V` for a version with no image yet, with an
empty harness cache and an empty Maven repository (jars and Maven's own plugins
downloaded again), so it is what a user's first run on that version pays. The
image it builds is the real one (kept); the base image is not rebuilt.
start: seconds from `start()` until `wait_healthy()` returns, KRaft combined,
3 nodes, images already built. upgrade: the whole `harness upgrade-check` command
(cluster up, load, the upgrade, drain, verify) and the upgrade's own seconds.
Each writes benchmarks/results/versions_bench-<what>-<time>.json and prints a table.
"""
from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
HARNESS = [str(ROOT / ".venv" / "bin" / "harness")]


def bench_images(versions: list[str]) -> list[dict]:
    from clusters.images import _image_exists, kafka_image_tag
    from clusters.versions import resolve_version
    rows = []
    for name in versions:
        kv = resolve_version(name)
        if _image_exists(kafka_image_tag(kv)):
            rows.append({"version": kv.version, "skipped": "image already built"})
            continue
        with tempfile.TemporaryDirectory(prefix="version-build-") as tmp:
            env = {**os.environ, "HARNESS_CACHE": f"{tmp}/cache",
                   "MAVEN_OPTS": f"-Dmaven.repo.local={tmp}/m2"}
            started = time.monotonic()
            r = subprocess.run([*HARNESS, "images", "build", "--version", kv.version], env=env,
                               cwd=ROOT, capture_output=True, text=True)
            took = time.monotonic() - started
        rows.append({"version": kv.version, "seconds": round(took, 1), "exit": r.returncode,
                     "tail": r.stderr.strip().splitlines()[-1:] if r.stderr else []})
        print(f"image {kv.version}: {took:.1f} s (exit {r.returncode})", flush=True)
    return rows


def bench_start(versions: list[str], repeat: int) -> list[dict]:
    from clusters.docker_cluster import DockerCluster
    from clusters.spec import ClusterSpec
    from faults.base import FaultContext, sh
    from faults.rolling import _finalized_levels, features_describe_script
    rows = []
    for name in versions:
        times, levels = [], {}
        for _ in range(repeat):
            cluster = DockerCluster(ClusterSpec.kraft_combined(name))
            try:
                started = time.monotonic()
                cluster.start()
                times.append(round(time.monotonic() - started, 1))
                ctx = FaultContext(cluster=cluster)
                levels = _finalized_levels(sh(cluster.brokers()[0], features_describe_script(
                    ctx.kafka_java, ctx.internal_bootstrap), check=False))
            finally:
                cluster.stop()
        rows.append({"version": ClusterSpec.kraft_combined(name).kafka.version, "seconds": times,
                     "median_s": statistics.median(times), "features": levels})
        print(f"start {name}: {times} {levels}", flush=True)
    return rows


def bench_upgrade(pairs: list[str], runs_dir: Path) -> list[dict]:
    rows = []
    for pair in pairs:
        old, new = pair.split(":")          # 3.8zk:3.9 -> ZooKeeper mode; 4.1:4.3rb -> --rollback
        extra = ["--set", "cluster.mode=zookeeper"] if old.endswith("zk") else []
        extra += ["--rollback"] if new.endswith("rb") else []
        old, new = old.removesuffix("zk"), new.removesuffix("rb")
        started = time.monotonic()
        r = subprocess.run([*HARNESS, "upgrade-check", "--from", old, "--to", new, "--plain",
                            "--runs-dir", str(runs_dir), *extra], cwd=ROOT, capture_output=True,
                           text=True)
        took = time.monotonic() - started
        whole = re.search(r"the whole upgrade: ([\d.]+) s", r.stdout)
        rows.append({"pair": pair, "wall_s": round(took, 1), "exit": r.returncode,
                     "upgrade_s": float(whole[1]) if whole else None,
                     "report": [ln for ln in r.stdout.splitlines() if ln.startswith(("  ", "upgrade", "plan"))][-25:]})
        print(f"upgrade-check {pair}: {took:.1f} s wall, upgrade {rows[-1]['upgrade_s']} s, "
              f"exit {r.returncode}", flush=True)
    return rows


def main() -> int:
    p = argparse.ArgumentParser()
    p.add_argument("what", choices=("images", "start", "upgrade"))
    p.add_argument("items", nargs="+", help="versions (images, start) or FROM:TO pairs")
    p.add_argument("--repeat", type=int, default=2)
    p.add_argument("--runs-dir", type=Path, default=Path("/tmp/versions-bench-runs"))
    args = p.parse_args()
    if args.what == "images":
        rows = bench_images(args.items)
    elif args.what == "start":
        rows = bench_start(args.items, args.repeat)
    else:
        rows = bench_upgrade(args.items, args.runs_dir)
    out = ROOT / "benchmarks" / "results" / \
        f"versions_bench-{args.what}-{time.strftime('%Y%m%dT%H%M%SZ', time.gmtime())}.json"
    out.write_text(json.dumps(rows, indent=1) + "\n")
    print(f"wrote {out.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
