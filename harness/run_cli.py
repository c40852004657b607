"""`harness run` and `harness list`: argument handling around harness.runner.

Bad input is refused before anything starts: the scenario (with its `--set`
overrides) is validated, the Docker engine asked, root checked; only then is a
run directory made.
"""
from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from harness.errors import HarnessError


def preflight() -> None:
    """What a run needs from the machine, checked before a run dir exists."""
    from clusters.docker_env import docker_client
    if os.geteuid() != 0:
        raise HarnessError("harness run needs root: log dirs are tmpfs mounts "
                           "(fix: run it as root, as the README's set-up does)")
    docker_client()


def run_command(args: argparse.Namespace) -> int:
    from harness.runner import RunOptions, run_scenario
    from harness.scenario import load_scenario
    scenario = load_scenario(args.scenario, tuple(args.overrides), args.seed)
    if args.dry_run:
        sys.stdout.write(scenario.to_yaml())
        return 0
    preflight()
    options = RunOptions(runs_dir=Path(args.runs_dir), verify=not args.no_verify,
                         spark_master=args.spark_master,
                         progress="plain" if args.plain else "auto")
    print(f"harness run: scenario {scenario.name} ({scenario.source}), seed {scenario.seed}",
          flush=True)
    result = run_scenario(scenario, options)
    print(f"run dir: {result.run_dir}")
    if result.exit_code == 2:
        print(f"harness run: could not judge: {result.reason}", file=sys.stderr)
        print(f"  the history is kept: harness verify {result.run_dir}", file=sys.stderr)
    else:
        print(f"verdict: {result.status.upper()} (exit {result.exit_code})")
    return result.exit_code


def list_command() -> int:
    import yaml

    from harness.scenario import BUILTIN_DIR, builtin_names
    width = max((len(n) for n in builtin_names()), default=0)
    for name in builtin_names():
        doc = yaml.safe_load((BUILTIN_DIR / f"{name}.yaml").read_text()) or {}
        print(f"{name:<{width}}  {doc.get('description', '')}")
    return 0
