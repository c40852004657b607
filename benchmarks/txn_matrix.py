"""The transactions matrix from a suite's runs: one row per run (client, broker, the
transaction protocol the client could speak, seed) with each transactional anomaly,
the transactions' outcomes and what the client did (fatal errors, re-inits, retries).

    python benchmarks/txn_matrix.py suites/transactions-<id> [--json out.json]

Reads each run's scenario.yaml, report/summary.json and history (produced, events).
"""
from __future__ import annotations

import argparse
import json
import re
from collections import Counter
from pathlib import Path

import yaml

from core.history import read_table

KINDS = ("aborted_read", "torn_transaction", "lost", "unexpected", "duplicate", "reordered")


def protocol(client: str, client_version: str, broker: str, tv: int | None) -> str:
    """The transaction protocol the client speaks with these brokers (KIP-890 part 2)."""
    if client == "librdkafka" or client_version.startswith("3.") or broker.startswith("3."):
        return "v1"
    return "v1" if tv == 1 else "v2"


# the coordinator's state updates, 3.9 (Scala) and 4.x (Java) alike; 4.x also names the
# protocol the client's requests spoke (TV_0/TV_1: transactions v1, TV_2: v2)
_UPDATE = re.compile(r"transaction state to TxnTransitMetadata.*?producerEpoch=(\d+)"
                     r"(?:.*?clientTransactionVersion=(TV_\d))?")


def coordinator_said(run_dir: Path) -> dict:
    """From the brokers' coordinator DEBUG lines (cluster.log_levels): the producer epochs
    its transactions ran under, the transaction versions the client spoke, and the EndTxn
    calls it refused as INVALID_TXN_STATE."""
    epochs, versions, invalid = set(), set(), 0
    for log in (run_dir / "logs").glob("kafka-*.log"):
        for line in log.read_text(errors="replace").splitlines():
            if "kafka.coordinator.transaction" not in line:
                continue
            m = _UPDATE.search(line)
            if m:
                epochs.add(int(m.group(1)))
                versions.update([m.group(2)] if m.group(2) else [])
            invalid += "returning INVALID_TXN_STATE error to client" in line
    return {"coordinator_epochs": len(epochs), "coordinator_tv": ",".join(sorted(versions)) or "-",
            "coordinator_invalid_endtxn": invalid}


def run_row(run_dir: Path) -> dict:
    sc = yaml.safe_load((run_dir / "scenario.yaml").read_text())
    summary = json.loads((run_dir / "report" / "summary.json").read_text())
    p = sc["workload"]["producers"][0]
    broker = sc["cluster"]["version"]
    tv = sc["cluster"].get("transaction_version")
    client = p.get("client", "librdkafka")
    cv = (sc["workload"].get("clients_version") or broker) if client == "java" else "2.16.0"
    produced = read_table(run_dir, "produced").select(["producer", "txn_seq", "txn_outcome"]).to_pandas()
    txns = produced.drop_duplicates(["producer", "txn_seq"]).txn_outcome.value_counts().to_dict()
    events = read_table(run_dir, "events").select(["kind", "name"]).to_pandas()
    names = Counter(events[events.kind == "client"].name)
    return {"run": run_dir.name, "client": client, "client_version": cv, "broker": broker,
            "transaction_version": tv, "protocol": protocol(client, cv, broker, tv),
            "seed": sc["seed"], "on_fatal": p.get("on_fatal", "stop"),
            "verdict": summary["verdict"]["status"],
            **{k: summary["anomalies"].get(k, 0) for k in KINDS},
            "acked": summary["counts"]["acked"], "indeterminate": summary["counts"]["indeterminate"],
            "txn_committed": txns.get("committed", 0), "txn_aborted": txns.get("aborted", 0),
            "txn_unknown": txns.get("unknown", 0), "client_fatals": summary["counts"].get("client_fatals", 0),
            "deaths": summary["counts"].get("workload_deaths", 0),
            "reinits": names.get("producer-reinit", 0), "retries": names.get("txn-retry", 0),
            "fatal_errors": sorted({f["error"] for f in summary.get("client_fatals") or []}),
            **coordinator_said(run_dir)}


def rows_of(suite_dir: Path) -> list[dict]:
    out = []
    for run in sorted(p.parent.parent for p in suite_dir.glob("*/report/summary.json")):
        out.append(run_row(run))
    return out


def markdown(rows: list[dict]) -> str:
    cols = ("client", "client_version", "broker", "transaction_version", "protocol", "seed",
            *KINDS, "txn_committed", "txn_aborted", "txn_unknown", "client_fatals", "reinits",
            "retries", "coordinator_epochs", "coordinator_tv", "coordinator_invalid_endtxn", "on_fatal",
            "deaths", "verdict")
    lines = ["| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
    for r in rows:
        lines.append("| " + " | ".join(str(r[c]) for c in cols) + " |")
    return "\n".join(lines)


if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("suite_dir")
    ap.add_argument("--json")
    a = ap.parse_args()
    rows = rows_of(Path(a.suite_dir))
    print(markdown(rows))
    if a.json:
        Path(a.json).write_text(json.dumps(rows, indent=1, default=str))
