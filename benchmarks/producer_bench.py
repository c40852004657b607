"""Our verifiable producer vs Kafka's Java VerifiableProducer, same cluster, same run.

    .venv/bin/python benchmarks/producer_bench.py [--records 200000] [--rounds 2] [--security sasl_ssl]

One 3-broker KRaft cluster, one topic (6 partitions, RF 3, min.insync.replicas 2).
Both producers: acks=all, idempotent, linger.ms=5, every outcome recorded (ours:
Parquet `produced` rows; Java: its JSON event per record, converted to the same
rows on the host while it runs). Rounds alternate Java / ours so drift in the
machine's load hits both. Throughput = records / (first send -> last ack):
ours from the history (min send_ts_us .. max ack_ts_us); Java from its
startup_complete event (printed right before its send loop) to its last ack.

Caveat printed with the results: the Java tool writes its own values ("5.123",
~8 bytes) and has no record-size option; ours are 100 bytes.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from dataclasses import replace
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from clusters.docker_cluster import DockerCluster  # noqa: E402
from clusters.spec import ClusterSpec  # noqa: E402
from core.context import RunContext  # noqa: E402
from core.history import read_table  # noqa: E402
from workloads.connection import connected  # noqa: E402
from workloads.java_clients import run_java_producer  # noqa: E402
from workloads.producer import ProducerProcess  # noqa: E402
from workloads.spec import ProducerSpec  # noqa: E402


def ours(cluster, topic: str, records: int, processes: int, run_dir: str) -> dict:
    per = records // processes
    ctx = _context(cluster, run_dir)
    # connected(): the cluster's TLS/SASL settings in the producer's client_config, as the
    # runner's start_producer gives them (without it a secured cluster acks nothing)
    procs = [ProducerProcess(connected(ProducerSpec(name=f"p{i}", topic=topic, records=per, acks="all",
                                                    enable_idempotence=True, linger_ms=5, record_size=100),
                                       ctx), ctx)
             for i in range(processes)]
    t0 = time.monotonic()
    try:
        for p in procs:
            p.start()
        for p in procs:
            assert p.wait(600) and p.exitcode == 0, "producer failed"
    finally:
        for p in procs:
            if p.is_alive():
                p.kill()
    wall = time.monotonic() - t0
    t = read_table(run_dir, "produced").select(["status", "send_ts_us", "ack_ts_us"]).to_pandas()
    acked = int((t.status == "acked").sum())
    span = (t.ack_ts_us.max() - t.send_ts_us.min()) / 1e6
    return {"records": len(t), "acked": acked, "span_s": round(span, 3),
            "rate": round(len(t) / span), "wall_s": round(wall, 2)}


def _context(cluster, run_dir: str) -> RunContext:
    """The clients' context: a secured cluster's connection settings included."""
    return RunContext(cluster.run_id, Path(run_dir), None, cluster, client_config=cluster.client_config())


def java(cluster, topic: str, records: int, run_dir: str) -> dict:
    t0 = time.monotonic()
    info = run_java_producer(_context(cluster, run_dir), topic=topic,
                             max_messages=records, prefix=0, acks="all", config={"linger.ms": 5})
    wall = time.monotonic() - t0
    span = (info["last_ack_us"] - info["startup_us"]) / 1e6
    return {"records": info["counts"]["sent"], "acked": info["counts"]["acked"],
            "span_s": round(span, 3), "rate": round(info["counts"]["sent"] / span),
            "tool_avg_throughput": round(info["tool_data"]["avg_throughput"]),
            "wall_s": round(wall, 2)}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--records", type=int, default=200_000)
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--version", default="3.9")
    ap.add_argument("--security", default="none", choices=["none", "sasl_ssl"],
                    help="sasl_ssl: SCRAM-SHA-512 over TLS on every listener (clusters/security.py)")
    args = ap.parse_args()
    spec = replace(ClusterSpec.kraft_combined(args.version).with_config({"min.insync.replicas": "2"}),
                   security=args.security)
    results: dict[str, list[dict]] = {"java": [], "ours_1proc": [], "ours_2proc": []}
    with DockerCluster(spec) as cluster, tempfile.TemporaryDirectory() as tmp:
        def topic(i: int, who: str) -> str:
            name = f"bench-{who}-{i}"
            cluster.create_topic(name, 6, 3, {"min.insync.replicas": "2"})
            return name

        for r in range(args.rounds):
            for who in ("java", "ours_1proc", "ours_2proc"):
                run_dir = os.path.join(tmp, f"{who}-{r}")
                t = topic(r, who.replace("_", "-"))
                res = (java(cluster, t, args.records, run_dir) if who == "java" else
                       ours(cluster, t, args.records, 1 if who == "ours_1proc" else 2, run_dir))
                res["load_avg_1m"] = os.getloadavg()[0]
                results[who].append(res)
                print(f"round {r} {who}: {json.dumps(res)}", flush=True)
    med = {k: statistics.median(x["rate"] for x in v) for k, v in results.items()}
    print(json.dumps({"median_rate": med,
                      "ratio_1proc_vs_java": round(med["ours_1proc"] / med["java"], 2),
                      "ratio_2proc_vs_java": round(med["ours_2proc"] / med["java"], 2),
                      "records": args.records, "rounds": args.rounds, "security": args.security,
                      "caveat": "Java values are ~8 bytes ('0.<n>'), ours 100 bytes"}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
