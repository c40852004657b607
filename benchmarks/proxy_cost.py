"""What the protocol proxy costs a client with no rule set: throughput and ack latency
through it, against a direct link, on one cluster in one run.

    .venv/bin/python benchmarks/proxy_cost.py [--records 200000] [--rounds 3] [--version 4.3]

One 3-broker KRaft cluster started with `toxiproxy: client, protocol_proxy: true`, one
topic (6 partitions, RF 3, min.insync.replicas 2). The two links differ only in where
toxiproxy's client proxies forward (its API, `POST /proxies/<name>`): to the protocol
proxy (client -> toxiproxy -> proxy -> broker, as a run with `protocol_proxy: true` has
it) or straight to the brokers (client -> toxiproxy -> broker, as a run without). A first
round of each, not counted, warms the brokers (the first rounds measured ran 2x slower
than the last); then rounds alternate the two, each first every other round, so a drift
in the machine's load or the brokers' warmth hits both. Each round runs our
verifiable producer (1 process, acks=all, idempotent, linger.ms 5, 100-byte records)
twice: unthrottled, for throughput = records / (first send -> last ack) (its latencies
are queueing, not the link); then at `--latency-rate` records/s for 10 s, for the ack
latency (each record's ack_ts - send_ts from the history: p50, p99, max).
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

import requests

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from clusters.config import CLIENT_PORT  # noqa: E402
from clusters.docker_cluster import DockerCluster  # noqa: E402
from clusters.spec import ClusterSpec  # noqa: E402
from clusters.toxiproxy_wiring import client_proxy_name  # noqa: E402
from core.context import RunContext  # noqa: E402
from core.history import read_table  # noqa: E402
from workloads.producer import ProducerProcess  # noqa: E402
from workloads.spec import ProducerSpec  # noqa: E402


def point_links(cluster: DockerCluster, through_proxy: bool, proxied: dict[int, str]) -> None:
    """Each broker's client proxy in toxiproxy forwards to the protocol proxy, or to the
    broker itself."""
    for bid in cluster.spec.broker_ids():
        upstream = proxied[bid] if through_proxy else f"kafka-{bid}:{CLIENT_PORT}"
        r = requests.post(f"{cluster.toxiproxy.api_url}/proxies/{client_proxy_name(bid)}",
                          json={"upstream": upstream}, timeout=5)
        r.raise_for_status()


def produce(cluster: DockerCluster, topic: str, run_dir: str, records: int,
            rate: int | None) -> dict:
    ctx = RunContext(cluster.run_id, Path(run_dir), None, cluster)
    spec = ProducerSpec(name="p0", topic=topic, records=records, rate=rate, acks="all",
                        enable_idempotence=True, linger_ms=5, record_size=100)
    proc = ProducerProcess(spec, ctx)
    proc.start()
    assert proc.wait(600) and proc.exitcode == 0, "producer failed"
    t = read_table(run_dir, "produced").select(["status", "send_ts_us", "ack_ts_us"]).to_pandas()
    acked = t[t.status == "acked"]
    lat_ms = (acked.ack_ts_us - acked.send_ts_us) / 1000
    span = (acked.ack_ts_us.max() - t.send_ts_us.min()) / 1e6
    return {"records": len(t), "acked": len(acked), "rate": round(len(t) / span),
            "p50_ms": round(float(lat_ms.quantile(0.5)), 1),
            "p99_ms": round(float(lat_ms.quantile(0.99)), 1),
            "max_ms": round(float(lat_ms.max()), 1)}


def one_round(cluster: DockerCluster, name: str, records: int, latency_rate: int,
              tmp: str) -> dict:
    for kind in ("tput", "lat"):
        cluster.create_topic(f"{name}-{kind}", 6, 3, {"min.insync.replicas": "2"})
    tput = produce(cluster, f"{name}-tput", os.path.join(tmp, f"{name}-tput"), records, None)
    lat = produce(cluster, f"{name}-lat", os.path.join(tmp, f"{name}-lat"), latency_rate * 10,
                  latency_rate)
    return {"rate": tput["rate"], "acked": tput["acked"] + lat["acked"],
            "p50_ms": lat["p50_ms"], "p99_ms": lat["p99_ms"], "max_ms": lat["max_ms"]}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--records", type=int, default=200_000)
    ap.add_argument("--rounds", type=int, default=4)
    ap.add_argument("--latency-rate", type=int, default=2000)
    ap.add_argument("--version", default="4.3")
    args = ap.parse_args()
    spec = replace(ClusterSpec.kraft_combined(args.version), toxiproxy="client",
                   protocol_proxy=True)
    results: dict[str, list[dict]] = {"proxy": [], "direct": []}
    with DockerCluster(spec) as cluster, tempfile.TemporaryDirectory() as tmp:
        proxied = {p["name"]: p["upstream"] for p in
                   requests.get(f"{cluster.toxiproxy.api_url}/proxies", timeout=5).json().values()}
        proxied = {bid: proxied[client_proxy_name(bid)] for bid in spec.broker_ids()}
        for r in range(-1, args.rounds):
            for link in (("direct", "proxy") if r % 2 == 0 else ("proxy", "direct")):
                point_links(cluster, link == "proxy", proxied)
                time.sleep(1)
                res = one_round(cluster, f"bench-{link}-{r}", args.records, args.latency_rate, tmp)
                res["load_avg_1m"] = round(os.getloadavg()[0], 1)
                seen = cluster.protocol_proxy.requests_seen
                res["proxy_requests_seen"] = sum(seen.values())
                if r >= 0:
                    results[link].append(res)
                print(f"round {r} {link}{' (warm-up)' if r < 0 else ''}: {json.dumps(res)}",
                      flush=True)
    med = {link: {k: statistics.median(x[k] for x in v) for k in ("rate", "p50_ms", "p99_ms")}
           for link, v in results.items()}
    print(json.dumps({"median": med,
                      "rate_proxy_vs_direct": round(med["proxy"]["rate"] / med["direct"]["rate"], 2),
                      "p99_proxy_vs_direct": round(med["proxy"]["p99_ms"] / med["direct"]["p99_ms"], 2),
                      "records": args.records, "latency_rate": args.latency_rate,
                      "rounds": args.rounds, "version": args.version},
                     indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
