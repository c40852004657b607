"""`harness compare`: argument handling around harness.batch.compare.

Every variant is validated (an unknown --vary key is named with the closest
known field) before the machine is checked and before a compare dir exists.

harness/cli/ builds every subcommand's parser at start, so this module imports
only argparse at load time; the command's own imports (Spark, Docker, Kafka's
client through the runner) are made when it runs.
"""
from __future__ import annotations

import argparse
import time
from pathlib import Path

from harness.cli.flags import PROGRESS, SEED, SET, SPARK


def add_parser(sub) -> argparse.ArgumentParser:
    c = sub.add_parser("compare", help="run one scenario under several configurations, side by side",
                       parents=[SET, SEED, SPARK, PROGRESS])
    c.add_argument("scenario", help="a scenario YAML file or a built-in name (`harness list`)")
    c.add_argument("--vary", action="append", default=[], metavar="KEY=V1,V2",
                   help="a field and its values, e.g. --vary producer.acks=1,all (repeat for a grid)")
    c.add_argument("--repeat", type=int, default=1, help="runs per variant (seeds seed, seed+1, …)")
    c.add_argument("--compares-dir", default="compares", help="where compare dirs go (default compares/)")
    return c


def compare_command(args: argparse.Namespace) -> int:
    from clusters.labels import new_run_id
    from harness.batch.compare import parse_vary, plan, run_compare
    from harness.batch.compare_report import write_outputs
    from harness.cli.run import preflight
    axes = parse_vary(args.vary)
    planned = plan(args.scenario, axes, args.repeat, tuple(args.overrides), args.seed)
    preflight()
    name = planned[0].scenario.name
    compare_dir = Path(args.compares_dir) / f"{name}-{new_run_id()}"
    compare_dir.mkdir(parents=True)
    print(f"harness compare {name}: {len(planned)} runs into {compare_dir}", flush=True)
    started = time.monotonic()
    rows = run_compare(planned, compare_dir, "plain" if args.plain else "auto", args.spark_master)
    meta = {"scenario": name, "axes": [{"key": a.key, "values": list(a.values)} for a in axes],
            "overrides": list(args.overrides), "repeat": args.repeat, "seed": planned[0].scenario.seed,
            "planned": len(planned),
            "seconds": round(time.monotonic() - started, 1)}
    doc = write_outputs(compare_dir, meta, rows)
    print_summary(doc)
    stopped = f" (interrupted after {len(rows)} of {len(planned)} runs)" if doc["exit_code"] == 2 else ""
    print(f"compare {name}{stopped}: {compare_dir / 'index.html'}")
    return doc["exit_code"]


def print_summary(doc: dict) -> None:
    for v in doc["variants"]:
        bad = [r for r in v["runs"] if r["status"] != "passed"]
        print(f"  {'met' if not bad else 'NOT met':<7} {v['variant']}"
              + "".join(f"\n          #{r['repeat']}: {r['status']}: "
                        f"{'; '.join(r.get('failures') or []) or r.get('reason') or ''}" for r in bad))
    for d in doc["differences"]:
        print(f"  differs: {d['metric']}: {d['kind']} ({d['why']})")
    if not doc["differences"]:
        print("  no difference called")
