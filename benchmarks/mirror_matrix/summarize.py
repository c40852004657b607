"""The MirrorMaker 2 matrix's results (run.sh's TSV) as Markdown: one row per run, then
the lag of a run's samples (p50 / p99 / max) for the no-fault lag runs.

Per run: verdict, acked records, mirror_lost, mirror_duplicate, translation_skip,
translation_rewind, MM2's checkpoints, the failover (synced / settled / neither), the
replication lag (source end − target end, summed over the partitions, one sample a
second while the load runs; a sample fails while a cluster does not answer): before the
first fault, its largest value during the fault
band (inject to heal), and the last sample of the load; the drain's catch-up wait; the
faults injected (of those planned) with their errors. Then each run whose target's end
offsets exceed the source's at its last sample, and by how many (target_ahead): its lag
reads low; each run whose MM2 had not caught up when the drain's wait ended (its verdict
passes on the partitions MM2 had reached: the rest is lag, not judged).

    /work/main/.venv/bin/python benchmarks/mirror_matrix/summarize.py [results.tsv]
"""
from __future__ import annotations

import json
import sys
from pathlib import Path

import pyarrow.dataset as ds

KINDS = ("mirror_lost", "mirror_duplicate", "translation_skip", "translation_rewind")


def events(run_dir: Path) -> list[dict]:
    t = ds.dataset(run_dir / "history" / "events").to_table(columns=["ts_us", "kind", "name", "detail"])
    return sorted(t.to_pylist(), key=lambda e: e["ts_us"])


def lag_samples(evs: list[dict]) -> list[tuple[int, int | None]]:
    """(ts_us, summed lag) per sample; None for a failed sample."""
    out = []
    for e in evs:
        if e["kind"] == "client" and e["name"] == "mirror-lag":
            parts = json.loads(e["detail"] or "{}").get("partitions")
            out.append((e["ts_us"], sum(int(p["lag"]) for p in parts) if parts else None))
    return out


def target_ahead(evs: list[dict]) -> int:
    """At the last answered sample: by how many offsets the target's ends exceed the
    source's, summed over the partitions. With exactly-once support MM2 writes a
    transaction marker per partition per transaction, which the target's end counts
    (docs/history.md); without, a record copied twice counts twice: the lag, clamped
    at 0, reads low by up to this many. 0 for a run whose lag was measured from MM2's
    committed offsets (its samples say `committed`: exactly-once support, since 43fc212)."""
    for e in reversed(evs):
        if e["kind"] == "client" and e["name"] == "mirror-lag":
            parts = json.loads(e["detail"] or "{}").get("partitions")
            if parts and any("committed" in p for p in parts):
                return 0
            if parts:
                return sum(max(0, int(p["target_end"]) - int(p["source_end"])) for p in parts)
    return 0


def bands(evs: list[dict]) -> list[tuple[int, int | None]]:
    """(inject ts, heal ts or None) per fault, by fault_id."""
    start, end = {}, {}
    for e in evs:
        if e["kind"] in ("fault", "heal"):
            fid = json.loads(e["detail"] or "{}").get("fault_id")
            (start if e["kind"] == "fault" else end).setdefault(fid, e["ts_us"])
    return [(s, end.get(f)) for f, s in start.items()]


def percentile(values: list[int], q: float) -> int | None:
    if not values:
        return None
    v = sorted(values)
    return v[min(len(v) - 1, int(q * len(v)))]


def lag_columns(evs: list[dict]) -> dict:
    samples = lag_samples(evs)
    ok = [(ts, lag) for ts, lag in samples if lag is not None]
    bs = bands(evs)
    first = min((s for s, _ in bs), default=None)
    last_heal = max((h for _, h in bs if h), default=None)
    before = [lag for ts, lag in ok if first is None or ts < first]
    during = [lag for ts, lag in ok if any(s <= ts <= (h or ts) for s, h in bs)]
    after = [lag for ts, lag in ok if last_heal is not None and ts > last_heal]
    return {"samples": f"{len(ok)}/{len(samples)}",
            "before": max(before, default="-"), "during": max(during, default="-"),
            "after_heal_min": min(after, default="-"), "last": ok[-1][1] if ok else "-",
            "p50": percentile([lag for _, lag in ok], 0.5),
            "p99": percentile([lag for _, lag in ok], 0.99),
            "max": max((lag for _, lag in ok), default=None)}


def failover(m: dict) -> str:
    f = m.get("failover") or {}
    if not f:
        return "-"
    how = "synced" if f.get("synced") else "settled" if f.get("settled") else "not synced"
    read = ",".join(str(g.get("read")) for g in (f.get("groups") or {}).values())
    return f"{how}, read {read}"


def run_row(run_dir: str) -> dict | None:
    d = Path(run_dir) if run_dir else None
    if d is None or not (d / "report" / "summary.json").exists():
        return None
    s = json.loads((d / "report" / "summary.json").read_text())
    faults = json.loads((d / "faults.json").read_text()) if (d / "faults.json").exists() else []
    m = s.get("mirror") or {}
    v = s["verdict"]
    return {"status": v["status"], "failures": v.get("failures") or [], "reason": v.get("reason"),
            "acked": s["counts"].get("acked"),
            "anomalies": " / ".join(str(s["anomalies"].get(k, "-")) for k in KINDS),
            "checkpoints": m.get("checkpoints"), "failover": failover(m),
            "catch_up_s": m.get("waited_s"), "caught_up": m.get("caught_up"),
            "behind": sum(int(p.get("behind") or 0) for p in m.get("partitions_behind") or []),
            "partitions_behind": len(m.get("partitions_behind") or []),
            "faults": f"{sum(1 for f in faults if not f.get('error'))}/{len(faults)}",
            "fault_errors": [f.get("error") for f in faults if f.get("error")],
            "target_ahead": target_ahead(evs := events(d)), **lag_columns(evs)}


def main(path: str) -> None:
    rows = [line.split("\t") for line in Path(path).read_text().splitlines() if line.strip()]
    print("| cell | exit | verdict | acked | lost / dup / skip / rewind | checkpoints | failover "
          "| lag before / in band (max) / after heal (min) / last | lag samples ok/all | catch-up s "
          "| faults | run |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|")
    bad, lags, ahead, behind = [], [], [], []
    for cell, rc, run_dir, _at in rows:
        r = run_row(run_dir)
        short = Path(run_dir).name if run_dir else "-"
        if r is None:
            print(f"| {cell} | {rc} | (no summary) | | | | | | | | | `{short}` |")
            bad.append((cell, rc, run_dir, None))
            continue
        print(f"| {cell} | {rc} | {r['status']} | {r['acked']} | {r['anomalies']} | "
              f"{r['checkpoints']} | {r['failover']} | {r['before']} / {r['during']} / "
              f"{r['after_heal_min']} / {r['last']} | {r['samples']} | {r['catch_up_s']} | {r['faults']} | `{short}` |")
        if r["status"] != "passed" or rc != "0":
            bad.append((cell, rc, run_dir, r))
        if cell.startswith("lag-"):
            lags.append((cell, r))
        if r["target_ahead"]:
            ahead.append((cell, r))
        if r["caught_up"] is False:
            behind.append((cell, r))
    for cell, r in ahead:
        print(f"\n{cell}: the target's end offsets exceed the source's by {r['target_ahead']} "
              "at the last sample (MM2's transaction markers with exactly-once support, records "
              "copied twice without): its lag reads low by up to that many")
    for cell, r in behind:
        print(f"\n{cell}: MM2 had not caught up when the drain's wait ended ({r['catch_up_s']} s): "
              f"{r['partitions_behind']} source partitions, {r['behind']} records behind; mirror_lost "
              "judges only the partitions it had caught up on, so its verdict does not cover them")
    for cell, r in lags:
        print(f"\n{cell}: {r['samples']} samples; lag p50 {r['p50']}, p99 {r['p99']}, "
              f"max {r['max']} records")
    for cell, rc, run_dir, r in bad:
        why = "no summary" if r is None else f"{r['failures']} {r['reason'] or ''} {r['fault_errors']}"
        print(f"\nnot passed: {cell} (exit {rc}, {run_dir}): {why}")


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "benchmarks/mirror_matrix/results.tsv")
