"""What each run of a suite cost, side by side: wall time (and without the verify),
cluster start, faults phase, ack latency, unavailability, recovery, throughput, lost.
Used for the secured/plain pairs of `benchmarks/secured-durable.yaml`.

    python benchmarks/suite_costs.py suites/<suite-dir>
"""
from __future__ import annotations

import argparse
import json
from pathlib import Path

import yaml


def _phase_s(phases: list[dict], name: str) -> float:
    return sum((p["end_us"] - p["start_us"]) / 1e6 for p in phases if p["name"] == name)


def run_row(run_dir: Path) -> dict:
    sc = yaml.safe_load((run_dir / "scenario.yaml").read_text())
    summary = json.loads((run_dir / "report" / "summary.json").read_text())
    phases = [p for p in json.loads((run_dir / "phases.json").read_text()) if p.get("end_us")]
    m = summary["metrics"]
    wall = (max(p["end_us"] for p in phases) - min(p["start_us"] for p in phases)) / 1e6
    verify = _phase_s(phases, "verify")
    return {"scenario": sc["name"], "security": sc["cluster"].get("security", "none"),
            "wall_s": round(wall, 1), "without_verify_s": round(wall - verify, 1),
            "cluster_up_s": round(_phase_s(phases, "cluster-up"), 1),
            "faults_s": round(_phase_s(phases, "faults"), 1),
            "ack_p50_ms": round(m["ack_latency_ms"]["p50"]), "ack_p99_ms": round(m["ack_latency_ms"]["p99"]),
            "max_unavailable_s": round(m["max_unavailability_s"] or 0, 1),
            "max_recovery_s": round(m["max_recovery_s"] or 0, 1),
            "acked_per_s": round(m["throughput"]["acked_per_s_mean"]),
            "acked_per_s_max": m["throughput"]["acked_per_s_max"],
            "acked": summary["counts"]["acked"], "lost": summary["anomalies"].get("lost", 0),
            "verdict": summary["verdict"]["status"]}


def markdown(rows: list[dict]) -> str:
    cols = list(rows[0])
    lines = ["| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
    lines += ["| " + " | ".join(str(r[c]) for c in cols) + " |" for r in rows]
    return "\n".join(lines)


if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("suite_dir")
    a = ap.parse_args()
    runs = sorted(p.parent.parent for p in Path(a.suite_dir).glob("*/report/summary.json"))
    print(markdown([run_row(r) for r in runs]))
