"""`harness upgrade-check`: its arguments, and the upgrade's own account before the
verdict (harness/batch/upgrade_check.py builds the upgrade scenario)."""
from __future__ import annotations

import argparse

from harness.batch.upgrade_check import (
    DEFAULT_SCENARIO,
    upgrade_lines,
    upgrade_plan_of,
    upgrade_scenario,
)
from harness.cli.flags import RUNNING, Options


def add_parser(sub) -> argparse.ArgumentParser:
    u = sub.add_parser("upgrade-check", help="upgrade your cluster under load and judge it "
                       "(rolling: controllers, brokers, metadata version)", parents=RUNNING)
    u.add_argument("--from", dest="from_version", required=True, help="the version you run, e.g. 3.9")
    u.add_argument("--to", dest="to_version", required=True, help="the version you upgrade to, e.g. 4")
    u.add_argument("--scenario", default=None,
                   help=f"your topology and configs: a scenario file or built-in (default {DEFAULT_SCENARIO})")
    u.add_argument("--rollback", action="store_true",
                   help="upgrade the binaries, then roll them back before the metadata version is "
                   "raised (where Kafka documents it); judged like the upgrade")
    return u


def upgrade_check_command(args: argparse.Namespace) -> int:
    # here, not at the top: every `harness` command builds this parser, and the runner's
    # imports (matplotlib, Spark's client) cost a second that `harness gc` need not pay
    from harness.cli.run import run_loaded
    opts = Options.of(args)
    scenario = upgrade_scenario(opts.scenario, args.from_version, args.to_version,
                                opts.overrides, opts.seed, rollback=args.rollback)
    print("\n".join(upgrade_plan_of(scenario).lines()), flush=True)
    return run_loaded(scenario, opts, epilogue=lambda result: print(upgrade_lines(result.run_dir)))
