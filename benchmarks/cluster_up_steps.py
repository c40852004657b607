"""Where a cluster start's seconds go (issue 37): one DockerCluster started and stopped,
each step timed.

    PYTHONPATH=$PWD flock /tmp/harness-cluster.lock /work/main/.venv/bin/python \
        benchmarks/cluster_up_steps.py --mode kraft-combined --version 4.3 [--repeat 3]

Prints, per start: the images check, the network, each container's create+start, and
wait_healthy with every reason it gave while waiting (at its time since start), then
each node's own log milestones (JVM's first line, storage formatted, "started", the
broker RUNNING) as seconds since start(), read from the containers' timestamps.
"""
from __future__ import annotations

import argparse
import re
import statistics
import sys
import time
from datetime import datetime
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from clusters import docker_cluster as dc  # noqa: E402
from clusters.docker_cluster import DockerCluster  # noqa: E402
from clusters.spec import ClusterSpec  # noqa: E402

MILESTONES = (
    ("formatted", re.compile(r"Formatting ")),
    ("zk-serving", re.compile(r"binding to port")),
    ("raft-leader", re.compile(r"Completed transition to Leader")),
    ("listening", re.compile(r"Awaiting socket connections on 0\.0\.0\.0:9092")),
    ("running", re.compile(r"to RUNNING|Transition from STARTING to STARTED|started \(kafka\.server")),
)

def spec_for(mode: str, version: str, brokers: int) -> ClusterSpec:
    if mode == "kraft-combined":
        return ClusterSpec.kraft_combined(version, brokers)
    if mode == "kraft-isolated":
        return ClusterSpec.kraft_isolated(version, brokers, 1)
    return ClusterSpec.zookeeper(version, brokers, 1)


class Timeline:
    def __init__(self):
        self.t0 = time.monotonic()
        self.wall0 = time.time()
        self.rows: list[tuple[float, str]] = []

    def mark(self, what: str) -> None:
        self.rows.append((time.monotonic() - self.t0, what))


def wrap(obj, name: str, tl: Timeline, label) -> None:
    original = getattr(obj, name)

    def timed(*args, **kw):
        started = time.monotonic()
        try:
            return original(*args, **kw)
        finally:
            tl.mark(f"{label(args)} {time.monotonic() - started:.2f} s")
    setattr(obj, name, timed)


def instrument(cluster: DockerCluster, tl: Timeline) -> None:
    wrap(dc, "ensure_images", tl, lambda a: "ensure_images")
    wrap(cluster, "_start_node", tl, lambda a: f"container {a[0].alias} created+started")
    wrap(cluster, "_start_toxiproxy", tl, lambda a: "toxiproxy started and wired")
    wrap(cluster, "wait_healthy", tl, lambda a: "wait_healthy")
    reason = cluster._unhealthy_reason

    def logged(want):
        started = time.monotonic()
        r = reason(want)
        tl.mark(f"  check {time.monotonic() - started:.2f} s: {r or 'HEALTHY'}")
        return r
    cluster._unhealthy_reason = logged


def milestones(cluster: DockerCluster, tl: Timeline) -> list[str]:
    out = []
    for node in cluster.nodes():
        text = node.container.logs(timestamps=True).decode(errors="replace")
        seen = {}
        for line in text.splitlines():
            stamp, _, rest = line.partition(" ")
            for name, rx in MILESTONES:
                if name not in seen and rx.search(rest):
                    seen[name] = _since(stamp, tl.wall0)
            seen.setdefault("first-line", _since(stamp, tl.wall0))
        cpu = node.container.stats(stream=False)["cpu_stats"]["cpu_usage"]["total_usage"] / 1e9
        seen["cpu-s"] = cpu
        out.append(f"  {node.name}: " + ", ".join(f"{k} {v:.1f}" for k, v in
                                                  sorted(seen.items(), key=lambda kv: kv[1])))
    return out


def _since(stamp: str, wall0: float) -> float:
    # Docker's RFC 3339 with nanoseconds: keep microseconds for fromisoformat
    m = re.match(r"(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d)(\.\d+)?Z", stamp)
    if not m:
        return float("nan")
    frac = (m.group(2) or ".0")[:7]
    return datetime.fromisoformat(m.group(1) + frac + "+00:00").timestamp() - wall0


def one_start(spec: ClusterSpec, show: bool, logs_dir: str | None = None) -> float:
    cluster = DockerCluster(spec)
    tl = Timeline()
    instrument(cluster, tl)
    try:
        started = time.monotonic()
        cluster.start()
        total = time.monotonic() - started
        tl.mark("start() returned")
        if show:
            for at, what in tl.rows:
                print(f"{at:6.2f}  {what}")
            print("\n".join(milestones(cluster, tl)))
        if logs_dir:
            Path(logs_dir).mkdir(parents=True, exist_ok=True)
            for node in cluster.nodes():
                Path(logs_dir, f"{node.name}.log").write_bytes(node.container.logs(timestamps=True))
        return total
    finally:
        cluster.stop()


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--mode", default="kraft-combined",
                    choices=("kraft-combined", "kraft-isolated", "zookeeper"))
    ap.add_argument("--version", default="4.3")
    ap.add_argument("--brokers", type=int, default=3)
    ap.add_argument("--repeat", type=int, default=1)
    ap.add_argument("--quiet", action="store_true", help="totals only")
    ap.add_argument("--logs", help="write each node's log, with Docker's timestamps, here")
    args = ap.parse_args()
    spec = spec_for(args.mode, args.version, args.brokers)
    totals = []
    for i in range(args.repeat):
        totals.append(one_start(spec, not args.quiet, args.logs))
        print(f"start {i}: {totals[-1]:.2f} s", flush=True)
    print(f"{args.mode} {args.version} x{args.brokers}: "
          f"{', '.join(f'{t:.1f}' for t in totals)}; median {statistics.median(totals):.1f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
