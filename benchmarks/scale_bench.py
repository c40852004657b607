"""Verify a history of ~100 M produced records: time and peak memory (issue 5: it
must verify on this 24 GiB machine without running out of memory).

The history is the 10 M-record benchmark history (verify_bench.py writes it)
copied N times, one file at a time: copy i gets topic `t<i>` (copy 0 keeps `t`),
and its producers, record ids and transactional ids get the suffix `c<i>` before
the seq (`p0-5` becomes `p0c3-5`; never-sent `ghost-5` becomes `ghostc3-5`), so
the copies share no record, position or topic partition. Groups, timestamps and
the events (copy 0's only) stay as they are. Every anomaly count is then N times
the 10 M history's injected truth.

    .venv/bin/python benchmarks/scale_bench.py                # 10 copies: 102 M records
    .venv/bin/python benchmarks/scale_bench.py --copies 10 --duckdb

Writes benchmarks/results/scale_bench-<time>.json and prints one Markdown row.
"""
from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

import pyarrow as pa  # noqa: E402
import pyarrow.compute as pc  # noqa: E402
import pyarrow.parquet as pq  # noqa: E402
from verify_bench import PY, run_measured  # noqa: E402

TABLES = ("produced", "consumed", "commits", "events")


def _suffixed(col: pa.ChunkedArray, suffix: str, before_seq: bool) -> pa.ChunkedArray:
    if before_seq:      # "<name>-<seq>" -> "<name><suffix>-<seq>"; null stays null
        return pc.replace_substring_regex(col, pattern=r"-([0-9]+)$",
                                          replacement=suffix + r"-\1")
    return pc.binary_join_element_wise(col, pa.scalar(suffix), "")


def copy_table(src: Path, dst: Path, table: str, i: int) -> int:
    """Copy i of one table, file by file (one file in memory at a time); its rows."""
    rows = 0
    out = dst / "history" / table
    out.mkdir(parents=True, exist_ok=True)
    for f in sorted((src / "history" / table).glob("*.parquet")):
        t = pq.read_table(f)
        rows += t.num_rows
        if i:
            if table == "events":
                continue                      # the timeline is copy 0's
            cols = {"topic": pa.array([f"t{i}"] * t.num_rows, pa.string())}
            for name, before_seq in (("producer", False), ("record_id", True),
                                     ("txn_id", False)):
                if name in t.column_names:
                    cols[name] = _suffixed(t[name], f"c{i}", before_seq)
            for name, col in cols.items():
                t = t.set_column(t.schema.get_field_index(name), name, col)
        pq.write_table(t, out / f"c{i}-{f.name}")
    return rows


def build(src: Path, dst: Path, copies: int) -> dict:
    truth = json.loads((src / "truth.json").read_text())
    if (dst / "truth.json").exists():
        return json.loads((dst / "truth.json").read_text())
    t0 = time.monotonic()
    for i in range(copies):
        for table in TABLES:
            copy_table(src, dst, table, i)
        print(f"copy {i + 1}/{copies} written ({time.monotonic() - t0:.0f} s)", flush=True)
    for name in ("scenario.yaml", "manifest.json"):
        if (src / name).exists():
            (dst / name).write_text((src / name).read_text())
    scaled = {"anomalies": {k: v * copies for k, v in truth["anomalies"].items()},
              "counts": {k: v * copies for k, v in truth["counts"].items()},
              "copies": copies, "build_seconds": round(time.monotonic() - t0, 1)}
    (dst / "truth.json").write_text(json.dumps(scaled))
    return scaled


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--copies", type=int, default=10)
    ap.add_argument("--base-records", type=int, default=10_000_000,
                    help="which verify_bench history to copy")
    ap.add_argument("--data", type=Path, default=ROOT / "benchmarks" / "data")
    ap.add_argument("--duckdb", action="store_true", help="also time the DuckDB reference")
    a = ap.parse_args()
    src = a.data.resolve() / f"synthetic-{a.base_records}"
    if not (src / "truth.json").exists():
        raise SystemExit(f"{src}: run benchmarks/verify_bench.py --records {a.base_records} first")
    dst = a.data.resolve() / f"synthetic-{a.base_records}x{a.copies}"
    truth = build(src, dst, a.copies)
    got = run_measured([str(ROOT / ".venv/bin/harness"), "verify", str(dst)])
    if got["rc"] not in (0, 1):
        raise SystemExit(f"harness verify failed (rc {got['rc']}):\n{got['stderr']}")
    summary = json.loads((dst / "report" / "summary.json").read_text())
    out = {"produced_rows": truth["counts"]["sent"], "consumed_rows": truth["counts"]["consumed"],
           "verify_seconds": got["seconds"], "verify_cpu_seconds": got["cpu_seconds"],
           "verify_peak_rss_mib": got["peak_rss_mib"], "steal_seconds": got["steal_seconds"],
           "matches_injected": summary["anomalies"] == truth["anomalies"],
           "steps": summary.get("step_seconds"), "notes": summary.get("notes")}
    if a.duckdb:
        duck = run_measured([PY, str(ROOT / "benchmarks/duckdb_reference.py"), str(dst)])
        ref = json.loads(duck["stdout"]) if duck["rc"] == 0 else {}
        out.update({"duckdb_seconds": duck["seconds"], "duckdb_peak_rss_mib": duck["peak_rss_mib"],
                    "duckdb_rc": duck["rc"],
                    "identical_counts": ref.get("anomalies") == summary["anomalies"]})
    results = ROOT / "benchmarks" / "results"
    results.mkdir(exist_ok=True)
    stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
    (results / f"scale_bench-{stamp}.json").write_text(json.dumps(out, indent=2))
    print("| produced | consumed rows | harness verify wall s (CPU s) | peak RSS MiB | "
          "= injected |")
    print(f"| {out['produced_rows']:,} | {out['consumed_rows']:,} | {out['verify_seconds']} "
          f"({out['verify_cpu_seconds']}) | {out['verify_peak_rss_mib']} | "
          f"{out['matches_injected']} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
