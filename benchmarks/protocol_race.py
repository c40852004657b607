"""For a `txn-delayed-produce-exact` run: each Produce the protocol proxy held, and the
EndTxn requests the same producer sent while it was held (the race the scenario makes),
with the run's verdict and counts, as one JSON line.

    .venv/bin/python benchmarks/protocol_race.py RUN_DIR
"""
from __future__ import annotations

import json
import sys
from pathlib import Path

import pyarrow.dataset as ds


def producer_of(request: dict) -> str:
    return (request.get("client_id") or "").split(".")[0]      # p0.1 restarted p0


def races(run_dir: Path) -> dict:
    events = ds.dataset(run_dir / "history" / "events").to_table().to_pylist()
    requests = [{**json.loads(e["detail"]), "ts": e["ts_us"]} for e in events
                if e["name"] == "protocol-request"]
    held = [r for r in requests if r.get("api") == "Produce"]
    ends = [r for r in requests if r.get("api") == "EndTxn"]
    raced = other_broker = 0
    for h in held:
        during = [e for e in ends if h["ts"] < e["ts"] < h["ts"] + h.get("delay_ms", 0) * 1000
                  and producer_of(e) == producer_of(h)]
        raced += bool(during)
        other_broker += any(e["broker"] != h["broker"] for e in during)
    s = json.loads((run_dir / "report" / "summary.json").read_text())
    a, c = s["anomalies"], s["counts"]
    return {"run": run_dir.name, "verdict": s["verdict"]["status"], "held_produce": len(held),
            "endtxn_seen": len(ends), "held_past_an_endtxn": raced,
            "endtxn_on_other_broker": other_broker,
            "records_in_held": sum(h.get("records") or 0 for h in held),
            "acked": c.get("acked"), "failed": c.get("failed"),
            **{k: a.get(k) for k in ("aborted_read", "torn_transaction", "lost", "duplicate")}}


if __name__ == "__main__":
    print(json.dumps(races(Path(sys.argv[1]))))
