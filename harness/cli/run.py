"""`harness run` and `harness list`: argument handling around harness.run.runner.

Bad input is refused before anything starts: the scenario (with its `--set`
overrides) is validated, the Docker engine asked, root checked; only then is a
run directory made.
"""
from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

import yaml

from clusters.docker_env import docker_client
from clusters.labels import new_run_id
from core.errors import HarnessError
from harness.batch.suite import expand, interrupted, load_suite, parse_budget, run_suite, suite_tally
from harness.batch.suite_report import write_outputs
from harness.cli.flags import Options
from harness.run import external as external_run
from harness.run.runner import RunOptions, run_scenario
from harness.scenario import BUILTIN_DIR, builtin_names, load_scenario


def preflight(scenario=None) -> None:
    """What a run needs from the machine (or from an external cluster: it answers, takes
    the credentials, lets the run create its topics), checked before a run dir exists."""
    if scenario is not None and scenario.cluster.external is not None:
        external_run.preflight(scenario)
        return
    if os.geteuid() != 0:
        raise HarnessError("harness run needs root: log dirs are tmpfs mounts "
                           "(fix: run it as root, as the README's set-up does)")
    docker_client()


def run_command(opts: Options) -> int:
    if not opts.watch:
        scenario = load_scenario(opts.scenario, opts.overrides, opts.seed)
    else:
        scenario, dropped = external_run.watch(opts.scenario, opts.overrides, opts.seed)
        # on stderr: with --dry-run, stdout stays a valid scenario document
        print(f"harness run --watch: no faults from the harness ({dropped} planned fault(s) left "
              f"out); the load runs {scenario.workload.duration_s:g} s while you make your changes",
              file=sys.stderr, flush=True)
    return run_loaded(scenario, opts)


def run_loaded(scenario, opts: Options, epilogue=None) -> int:
    """Run a validated scenario with `harness run`'s options (dry run, runs dir, progress);
    `epilogue(result)` prints a command's own lines before the verdict."""
    if opts.dry_run:
        sys.stdout.write(scenario.to_yaml())
        plan = external_run.plan_lines(scenario)
        if plan:
            # comment lines: the output stays a valid scenario document
            sys.stdout.write("# the commands exec faults would run:\n" + "".join(
                f"#   {'    ' if i else ''}{part}\n" for line in plan for i, part in enumerate(line.split("\n"))))
        return 0
    preflight(scenario)
    options = RunOptions(runs_dir=opts.runs_dir, verify=opts.verify,
                         spark_master=opts.spark_master, progress=opts.progress)
    print(f"harness run: scenario {scenario.name} ({scenario.source}), seed {scenario.seed}",
          flush=True)
    result = run_scenario(scenario, options)
    if epilogue is not None:
        epilogue(result)
    print(f"run dir: {result.run_dir}")
    if result.exit_code == 2:
        print(f"harness run: could not judge: {result.reason}", file=sys.stderr)
        print(f"  the history is kept: harness verify {result.run_dir}", file=sys.stderr)
    else:
        print(f"verdict: {result.status.upper()} (exit {result.exit_code})")
    return result.exit_code


def list_command() -> int:

    width = max((len(n) for n in builtin_names()), default=0)
    for name in builtin_names():
        doc = yaml.safe_load((BUILTIN_DIR / f"{name}.yaml").read_text()) or {}
        print(f"{name:<{width}}  {doc.get('description', '')}")
    return 0


def suite_command(args: argparse.Namespace) -> int:

    suite = load_suite(args.suite)
    modes = args.modes.split(",") if args.modes else suite.modes
    versions = args.versions.split(",") if args.versions else suite.versions
    if args.repeat < 1:
        raise HarnessError("--repeat must be 1 or more")
    budget = parse_budget(args.budget)
    runs, skipped = expand(suite, modes, versions, args.repeat)      # validated before anything starts
    preflight()
    suite_dir = Path(args.suites_dir) / f"{suite.name}-{new_run_id()}"
    suite_dir.mkdir(parents=True)
    print(f"harness suite {suite.name}: {len(runs)} runs into {suite_dir}", flush=True)
    started = time.monotonic()
    rows = run_suite(suite, runs, suite_dir, budget, "plain" if args.plain else "auto",
                     args.spark_master)
    write_outputs(suite_dir, suite.name, rows, skipped, time.monotonic() - started)
    bad = [r for r in rows if r["verdict"] not in ("passed", "skipped")]
    for r in rows:
        print(f"  {r['verdict']:<8} {r['scenario']} [{r['mode']} {r['version']} #{r['repeat']}]"
              + (f": {'; '.join(r.get('failures') or []) or r.get('reason') or r.get('why') or ''}"
                 if r["verdict"] != "passed" else ""))
    stopped = " (interrupted: the rest not started)" if interrupted(rows) else ""
    print(f"suite {suite.name}: {suite_tally(rows)}{stopped}; {suite_dir / 'index.html'}")
    return 2 if stopped else 1 if bad else 0
