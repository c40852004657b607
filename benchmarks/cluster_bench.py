"""Cluster start-up and image build times.

    .venv/bin/python benchmarks/cluster_bench.py [--repeat 2] [--cold-build]

For each topology: seconds from `start()` (images already built) until
`wait_healthy()` returns, repeated. With --cold-build, also the time to build
every image from nothing: empty Maven repository, Go module cache and harness
cache, and new image tags (HARNESS_IMAGE_SALT), so it measures downloads and
builds without disturbing the images other runs are using; the salted images
are removed afterwards.

Appends a section to benchmarks/RESULTS.md.
"""
from __future__ import annotations

import argparse
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from clusters.docker_cluster import DockerCluster  # noqa: E402
from clusters.images import ensure_images  # noqa: E402
from clusters.spec import ClusterSpec  # noqa: E402
from clusters.versions import all_versions  # noqa: E402

TOPOLOGIES = {
    "KRaft combined 3.9 (3 nodes)": ClusterSpec.kraft_combined("3.9"),
    "KRaft combined 4.x (3 nodes)": ClusterSpec.kraft_combined("4"),
    "KRaft isolated 4.x (1 controller + 3 brokers)": ClusterSpec.kraft_isolated("4", 3, 1),
    "ZooKeeper 3.9 (1 zk + 3 brokers)": ClusterSpec.zookeeper("3.9", 3, 1),
}
TARGET_S = 25.0


def time_start(spec: ClusterSpec) -> float:
    cluster = DockerCluster(spec)
    try:
        started = time.monotonic()
        cluster.start()
        return time.monotonic() - started
    finally:
        cluster.stop()


def cold_build() -> float:
    with tempfile.TemporaryDirectory(prefix="cold-build-") as tmp:
        env = {**os.environ, "HARNESS_CACHE": f"{tmp}/cache", "HARNESS_IMAGE_SALT": f"cold-{time.time()}",
               "MAVEN_OPTS": f"-Dmaven.repo.local={tmp}/m2", "GOMODCACHE": f"{tmp}/gomod",
               "GOCACHE": f"{tmp}/gocache"}
        started = time.monotonic()
        subprocess.run([sys.executable, "-m", "harness.cli", "images", "build"], env=env, check=True,
                       cwd=ROOT)
        elapsed = time.monotonic() - started
        tags = subprocess.run([sys.executable, "-c", "from clusters import images, versions;"
                               "print(images.base_image_tag());"
                               "[print(images.kafka_image_tag(v)) for v in versions.all_versions()];"
                               "print(images.toxiproxy_image_tag())"],
                              env=env, cwd=ROOT, capture_output=True, text=True, check=True)
        for tag in reversed(tags.stdout.split()):
            subprocess.run(["docker", "rmi", "-f", tag], capture_output=True)
        subprocess.run(["chmod", "-R", "u+w", tmp], capture_output=True)  # Go makes its cache read-only
    return elapsed


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeat", type=int, default=2)
    ap.add_argument("--cold-build", action="store_true")
    args = ap.parse_args()

    # Build (or find) every image first: the timings below are start-up only.
    ensure_images(toxiproxy=False)
    load_before = os.getloadavg()[0]
    lines = [f"\n## Clusters: start to healthy ({time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())})\n",
             f"Machine: {os.cpu_count()} cores, {platform.machine()}, Docker engine local; "
             f"images prebuilt; {args.repeat} runs each; 1-minute load average "
             f"{load_before:.1f} at the start. Target: 3-broker KRaft healthy in "
             f"<= {TARGET_S:.0f} s.\n",
             "| topology | runs (s) | median (s) | target |", "|---|---|---|---|"]
    for name, spec in TOPOLOGIES.items():
        runs = [time_start(spec) for _ in range(args.repeat)]
        med = statistics.median(runs)
        ok = "met" if ("KRaft" not in name or med <= TARGET_S) else "MISSED"
        lines.append(f"| {name} | {', '.join(f'{r:.1f}' for r in runs)} | {med:.1f} | "
                     f"{ok if 'KRaft' in name else 'n/a'} |")
        print(lines[-1], flush=True)
    if args.cold_build:
        secs = cold_build()
        lines.append(f"\nImage build from nothing (debootstrap base, Maven jars for "
                     f"{len(all_versions())} Kafka versions, go install toxiproxy, 4 docker builds): "
                     f"**{secs:.0f} s**.\n")
        print(lines[-1], flush=True)
    with open(ROOT / "benchmarks" / "RESULTS.md", "a") as fh:
        fh.write("\n".join(lines) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
