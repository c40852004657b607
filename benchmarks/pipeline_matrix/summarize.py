"""The pipeline matrix's results (run.sh's TSV) as Markdown tables: one row per cell
(fault, processor, version) over its seeds, then one row per run that did not pass.

Per cell: seeds passed / run; per seed (joined by " / ", in seed order): acked inputs,
drained outputs (the output topic read read_committed at the end), transactions
committed and aborted (the processor's own count; Kafka Streams: its commit-total
metric, and "-" for aborts, which it does not report), processor kills, faults
injected (of those planned) and whom they hit, and the pipeline anomalies
(pipeline_lost, pipeline_duplicate, state_gap, state_repeat).

    /work/main/.venv/bin/python benchmarks/pipeline_matrix/summarize.py [results.tsv]
"""
from __future__ import annotations

import json
import sys
from collections import defaultdict
from pathlib import Path

import pyarrow.compute as pc
import pyarrow.dataset as ds

KINDS = ("pipeline_lost", "pipeline_duplicate", "state_gap", "state_repeat")


def drained_outputs(run_dir: Path, output_topic: str = "counts") -> int:
    t = ds.dataset(run_dir / "history" / "consumed").to_table(
        columns=["phase", "topic", "source_record_id"])
    mask = pc.and_(pc.and_(pc.equal(t["phase"], "drain"), pc.equal(t["topic"], output_topic)),
                   pc.is_valid(t["source_record_id"]))
    return int(pc.sum(mask.cast("int64")).as_py() or 0)


def run_row(run_dir: str) -> dict | None:
    """What one run shows, from its summary.json, faults.json and history; None without a
    summary (the run did not get to its verdict)."""
    d = Path(run_dir) if run_dir else None
    if d is None or not (d / "report" / "summary.json").exists():
        return None
    s = json.loads((d / "report" / "summary.json").read_text())
    faults = json.loads((d / "faults.json").read_text()) if (d / "faults.json").exists() else []
    pipe = next(iter((s.get("pipelines") or {}).values()), {})
    a = s["anomalies"]
    return {"status": s["verdict"]["status"], "failures": s["verdict"].get("failures") or [],
            "reason": s["verdict"].get("reason"), "acked": s["counts"].get("acked"),
            "outputs": drained_outputs(d),
            # Kafka Streams: its commit-total metric; it does not report aborts
            "txns": f"{pipe.get('committed', '-')}/{pipe.get('aborted', '-')}"
            if pipe.get("begun") else f"{pipe.get('committed', '-')}/-",
            "kills": pipe.get("kills", 0),
            "faults": f"{sum(1 for f in faults if not f.get('error'))}/{len(faults)}",
            # whom each fault hit: its nodes, or a toxic's proxies (a broker's client link)
            "targets": ",".join(t for f in faults for t in (f.get("targets") or [])
                                or (f.get("detail") or {}).get("proxies") or ["?"]) or "-",
            "anomalies": " ".join(str(a.get(k, "-")) for k in KINDS),
            "deaths": s["counts"].get("workload_deaths", 0)}


def cells(path: str) -> dict[str, list[tuple[str, str, str, dict | None]]]:
    """cell (without its seed) -> [(seed, exit code, run dir, row)], in file order."""
    out: dict[str, list] = defaultdict(list)
    for line in Path(path).read_text().splitlines():
        cell, rc, run_dir, _ = line.split("\t")
        name, _, seed = cell.rpartition(" seed=")
        out[name].append((seed, rc, run_dir, run_row(run_dir)))
    return out


def joined(runs, key: str) -> str:
    return " / ".join(str(r[key]) if r else "?" for _s, _rc, _d, r in runs)


def faults_and_targets(runs) -> str:
    return " / ".join(f"{r['faults']}: {r['targets']}" if r else "?" for *_x, r in runs)


def main(path: str) -> None:
    table = cells(path)
    print("| fault | processor | version | passed / runs | acked inputs | drained outputs "
          "| txns committed/aborted | processor kills | faults injected: targets "
          "| lost dup gap repeat |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for name, runs in table.items():
        fault, processor, version = name.split(" ")
        passed = sum(1 for *_x, r in runs if r and r["status"] == "passed")
        print(f"| {fault} | {processor} | {version} | {passed} / {len(runs)} | {joined(runs, 'acked')} "
              f"| {joined(runs, 'outputs')} | {joined(runs, 'txns')} | {joined(runs, 'kills')} "
              f"| {faults_and_targets(runs)} | {joined(runs, 'anomalies')} |")
    bad = [(name, seed, rc, d, r) for name, runs in table.items() for seed, rc, d, r in runs
           if not r or r["status"] != "passed"]
    if bad:
        print("\n| run that did not pass | exit | run dir | why |")
        print("|---|---|---|---|")
        for name, seed, rc, d, r in bad:
            why = "; ".join(r["failures"]) or r["reason"] if r else "no summary"
            print(f"| {name} seed={seed} | {rc} | {d} | {why} |")


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "benchmarks/pipeline_matrix/results.tsv")
