"""`harness upgrade-check`: its arguments, and the upgrade's own account before the
verdict (harness/batch/upgrade_check.py builds the upgrade scenario)."""
from __future__ import annotations

import argparse
from pathlib import Path

from harness.batch.upgrade_check import (
    DEFAULT_SCENARIO,
    upgrade_lines,
    upgrade_plan_of,
    upgrade_scenario,
)
from harness.cli.run import run_loaded


def add_parser(sub) -> argparse.ArgumentParser:
    u = sub.add_parser("upgrade-check", help="upgrade your cluster under load and judge it "
                       "(rolling: controllers, brokers, metadata version)")
    u.add_argument("--from", dest="from_version", required=True, help="the version you run, e.g. 3.9")
    u.add_argument("--to", dest="to_version", required=True, help="the version you upgrade to, e.g. 4")
    u.add_argument("--scenario", default=None,
                   help=f"your topology and configs: a scenario file or built-in (default {DEFAULT_SCENARIO})")
    u.add_argument("--set", dest="overrides", action="append", default=[], metavar="KEY=VALUE",
                   help="override a field, e.g. --set cluster.brokers=5 --set topic.configs.min.insync.replicas=2")
    u.add_argument("--rollback", action="store_true",
                   help="upgrade the binaries, then roll them back before the metadata version is "
                   "raised (where Kafka documents it); judged like the upgrade")
    u.add_argument("--seed", type=int, default=None)
    u.add_argument("--runs-dir", type=Path, default=Path("runs"))
    u.add_argument("--no-verify", action="store_true")
    u.add_argument("--spark-master", default=None)
    u.add_argument("--plain", action="store_true")
    u.add_argument("--dry-run", action="store_true", help="print the resolved scenario; start nothing")
    return u


def upgrade_check_command(args: argparse.Namespace) -> int:
    scenario = upgrade_scenario(args.scenario, args.from_version, args.to_version,
                                tuple(args.overrides), args.seed, rollback=args.rollback)
    print("\n".join(upgrade_plan_of(scenario).lines()), flush=True)
    return run_loaded(scenario, args, epilogue=lambda result: print(upgrade_lines(result.run_dir)))
