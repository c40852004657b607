"""The share matrix's results (run.sh's TSV) as a Markdown table, one row per run:
verdict, the share kinds, redeliveries by cause, what killed members held and how fast
it came back, the drain."""
from __future__ import annotations

import collections
import json
import sys
from pathlib import Path

import pyarrow.parquet as pq

from families.shares.metrics import share_metrics

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/
from matrix_table import print_table  # noqa: E402

KINDS = ("share_lost", "share_double_accept", "share_redelivered_after_accept",
         "share_redelivered_after_reject",
         "share_over_limit", "share_concurrent", "share_redelivered")


def row(cell: str, rc: str, run_dir: str) -> str:
    s_path = Path(run_dir) / "report" / "summary.json"
    if not run_dir or not s_path.exists():
        result = json.loads((Path(run_dir) / "result.json").read_text()) if run_dir and (
            Path(run_dir) / "result.json").exists() else {}
        return f"| {cell} | | exit {rc} | {result.get('reason', 'no summary')[:120]} | | | | |"
    s = json.loads(s_path.read_text())
    a = s["anomalies"]
    kinds = " ".join(f"{a.get(k, '-')}" for k in KINDS)
    causes = collections.Counter()
    red = Path(run_dir) / "report" / "anomalies" / "share_redelivered"
    if red.exists():
        causes.update(r["cause"] for r in pq.read_table(red, columns=["cause"]).to_pylist())
    [g] = share_metrics(pq.read_table(Path(run_dir) / "history" / "share_deliveries").to_pylist(),
                        pq.read_table(Path(run_dir) / "history" / "events").to_pylist()).values()
    gap = (g.get("longest_gap") or {}).get("seconds")
    faults = json.loads((Path(run_dir) / "faults.json").read_text()) if (
        Path(run_dir) / "faults.json").exists() else []
    target = ", ".join(t for f in faults for t in f.get("targets") or [])
    kills = [r for r in g["returns"] if r["how"] == "kill" and r["held"]]
    held = ", ".join(f"{r['member']} {r['returned']}/{r['held']} max {r['max_s']} s" for r in kills)
    return (f"| {cell} | {target or '-'} | {s['verdict']['status']} | {kinds} | {gap} | "
            f"{', '.join(f'{k} {v}' for k, v in causes.most_common())} | {held or '-'} | "
            f"{g['drain']['records'] if g.get('drain') else '-'} |")


COLUMNS = [
    "cell",
    "fault on",
    "verdict",
    "lost dbl after-accept after-reject over conc redeliv",
    "stood still (s)",
    "redeliveries by cause",
    "killed members: back/held",
    "drain",
]


def main(path: str) -> None:
    print_table(path, COLUMNS, row)


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "benchmarks/share_matrix/results.tsv")
