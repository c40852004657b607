"""The protocol-fault matrix's results (run.sh's TSV) as a Markdown table, one row per run:
verdict, requests the proxy acted on, acked/failed, the anomaly counts that matter to
these scenarios, ack latency, and for txn-delayed-produce-exact the races it made.

    .venv/bin/python benchmarks/protocol_matrix/summarize.py [results.tsv]
"""
from __future__ import annotations

import json
import sys
from pathlib import Path

import pyarrow.dataset as ds

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/
from matrix_table import print_table  # noqa: E402

KINDS = ("lost", "duplicate", "reordered", "aborted_read", "torn_transaction")


def acted_on(run_dir: Path) -> str:
    events = ds.dataset(run_dir / "history" / "events").to_table(
        columns=["name", "detail"]).to_pylist()
    requests = [json.loads(e["detail"]) for e in events if e["name"] == "protocol-request"]
    by = {}
    for r in requests:
        key = f"{r.get('api')} {r.get('action', '')}".strip()
        by[key] = by.get(key, 0) + 1
    return ", ".join(f"{k} {v}" for k, v in sorted(by.items())) or "none"


def races(run_dir: Path) -> str:
    from protocol_race import races as count
    r = count(run_dir)
    return f"{r['held_past_an_endtxn']}/{r['held_produce']} ({r['endtxn_on_other_broker']})"


def row(cell: str, rc: str, run_dir: str) -> str:
    path = Path(run_dir) / "report" / "summary.json" if run_dir else None
    if not path or not path.exists():
        return f"| {cell} | exit {rc} | no summary | | | | | |"
    s = json.loads(path.read_text())
    c, a, m = s["counts"], s["anomalies"], s.get("metrics") or {}
    lat = m.get("ack_latency_ms") or {}
    race = races(Path(run_dir)) if cell.startswith("txn-") else "-"
    # Kafka's VerifiableProducer reports acks only: its rows' send time is the ack's, so a
    # run of it alone has no latency and no unavailability to show (not zero)
    unknown = lat.get("n") and not lat.get("max")
    latency = "n/a" if unknown else f"{lat.get('p50')} / {lat.get('p99')}"
    unavailable = "n/a" if unknown else m.get("max_unavailability_s")
    return (f"| {cell} | {s['verdict']['status']} | {acted_on(Path(run_dir))} | "
            f"{c.get('acked')} / {c.get('failed')} | {' '.join(str(a.get(k, '-')) for k in KINDS)} | "
            f"{latency} | {unavailable} | {race} |")


COLUMNS = [
    "cell",
    "verdict",
    "requests acted on",
    "acked / failed",
    "lost dup reord aborted_read torn",
    "ack ms p50 / p99",
    "max unavail. (s)",
    "held Produce past an EndTxn (other broker)",
]


def main(path: str) -> None:
    print_table(path, COLUMNS, row)


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "benchmarks/protocol_matrix/results.tsv")
