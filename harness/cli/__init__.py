"""The `harness` command line.

Subcommands are thin: each parses its arguments and hands them to the package
that owns the work. Exit codes everywhere: 0 ok, 1 a check failed (a verdict
with violations, `doctor` finding something missing), 2 bad input or the
harness could not do what was asked.
"""
from __future__ import annotations

import argparse
import os
import sys

from core.errors import HarnessError
from harness.cli.flags import PROGRESS, RUNNING, SPARK, Options, apply_spark_flags


def _doctor(args: argparse.Namespace) -> int:
    from harness.cli.doctor import run_doctor
    return run_doctor(verbose=args.verbose)


def _gc(args: argparse.Namespace) -> int:
    from clusters.gc import collect_garbage
    from harness.run.orphans import reap_orphan_spark_drivers
    from spark_reports.connect_server import reap_orphans
    removed = collect_garbage(all_runs=args.all, dry_run=args.dry_run)
    jvms = reap_orphan_spark_drivers(dry_run=args.dry_run)
    servers = reap_orphans(dry_run=args.dry_run)
    verb = "would remove" if args.dry_run else "removed"
    print(f"gc: {verb} {removed.containers} containers, {removed.networks} networks, "
          f"{removed.volumes} volumes, {jvms} orphaned Spark driver JVMs, "
          f"{servers} orphaned Spark Connect servers")
    return 0


def _images(args: argparse.Namespace) -> int:
    from clusters.images import build_all
    build_all(force=args.force, versions=args.version or None)
    return 0


def _images_list(args: argparse.Namespace) -> int:
    from clusters.images import images_table, list_images
    from clusters.versions import versions_source
    print(images_table(list_images()))
    print(f"(Kafka versions known from {versions_source()})")
    return 0


def _verify(args: argparse.Namespace) -> int:
    from harness.run.judge import verify_command
    from harness.run.phases import interruption
    why = interruption(args.run_dir)
    if why is not None:
        # No complete drain: nothing can be said about loss, so no Spark job is started.
        print(f"run {args.run_dir}: UNKNOWN\n  unknown: {why}")
        return 2
    return verify_command(args.run_dir, spark_master=args.spark_master, expect=args.expect)


def _run(args: argparse.Namespace) -> int:
    from harness.cli.run import run_command
    return run_command(Options.of(args))


def _suite(args: argparse.Namespace) -> int:
    from harness.cli.run import suite_command
    return suite_command(args)


def _compare(args: argparse.Namespace) -> int:
    from harness.cli.compare import compare_command
    return compare_command(args)


def _upgrade_check(args: argparse.Namespace) -> int:
    from harness.cli.upgrade import upgrade_check_command
    return upgrade_check_command(args)


def _list(args: argparse.Namespace) -> int:
    from harness.cli.run import list_command
    return list_command()


def _report(args: argparse.Namespace) -> int:
    if args.index:
        from harness.batch.report_index import write_index
        print(f"index: {write_index(args.index)}")
        return 0
    if not args.run_dir:
        raise HarnessError("harness report: give a RUN_DIR, or --index DIR")
    from harness.cli.report import rerender
    print(f"report: {rerender(args.run_dir)}")
    return 0


def _add_machine_commands(sub) -> None:
    d = sub.add_parser("doctor", help="say what is missing and how to fix it")
    d.add_argument("-v", "--verbose", action="store_true")
    d.set_defaults(func=_doctor)

    g = sub.add_parser("gc", help="remove leftover harness containers and networks")
    g.add_argument("--all", action="store_true",
                   help="also remove resources of runs that may still be live")
    g.add_argument("--dry-run", action="store_true")
    g.set_defaults(func=_gc)

    i = sub.add_parser("images", help="manage the locally built images")
    isub = i.add_subparsers(dest="images_command", required=True)
    ib = isub.add_parser("build", help="build the images (cached by content hash); other "
                         "Kafka versions are built on first use")
    ib.add_argument("--force", action="store_true", help="rebuild even if cached")
    ib.add_argument("--version", action="append",
                    help="a Kafka version or line, e.g. 4.1.2 or 3.8 (repeatable; 'all': every "
                    "line); default: the versions the built-in scenarios use")
    ib.set_defaults(func=_images)
    il = isub.add_parser("list", help="the images built: Kafka version, size, age")
    il.set_defaults(func=_images_list)

    from harness.cli.cluster import add_parser as add_cluster  # argparse only; the work is lazy
    add_cluster(sub)
    from harness.cli.spark import add_parser as add_spark
    add_spark(sub)


def _add_run_commands(sub) -> None:
    r = sub.add_parser("run", help="run a scenario: cluster, workload, faults, verdict",
                       parents=RUNNING)
    r.add_argument("scenario", nargs="?", default=None,
                   help="a scenario YAML file or a built-in name (`harness list`); default: default")
    r.add_argument("--watch", action="store_true",
                   help="no faults from the harness: the load runs while you make your own changes "
                   "(a rolling upgrade, maintenance); the report shows every change it saw")
    r.set_defaults(func=_run)

    su = sub.add_parser("suite", help="run many scenarios as one job (a built-in suite or a folder)",
                        parents=[SPARK, PROGRESS])
    su.add_argument("suite", help="a built-in suite (gate, ...), a suite YAML file or a folder of scenarios")
    su.add_argument("--modes", default=None,
                    help="e.g. kraft,zookeeper (kraft: each scenario's own KRaft mode) or kraft-isolated")
    su.add_argument("--versions", default=None, help="e.g. 3.9,4")
    su.add_argument("--repeat", type=int, default=1, help="run each N times with different seeds")
    su.add_argument("--budget", default=None, help="start nothing that would end later, e.g. 90m")
    su.add_argument("--suites-dir", default="suites", help="where suite dirs go (default suites/)")
    su.set_defaults(func=_suite)

    from harness.cli.compare import add_parser as add_compare  # argparse only; the work is lazy
    add_compare(sub).set_defaults(func=_compare)
    from harness.cli.upgrade import add_parser as add_upgrade_check
    add_upgrade_check(sub).set_defaults(func=_upgrade_check)

    ls = sub.add_parser("list", help="the built-in scenarios, one line each")
    ls.set_defaults(func=_list)


def _add_result_commands(sub) -> None:
    rp = sub.add_parser("report", help="re-render a stored run's report/index.html")
    rp.add_argument("run_dir", nargs="?")
    rp.add_argument("--index", metavar="DIR", default=None,
                    help="one page over every run below DIR: trends per scenario, linked to each run")
    rp.set_defaults(func=_report)

    v = sub.add_parser("verify", help="reconcile a stored run and write its report",
                       parents=[SPARK])
    v.add_argument("run_dir")
    v.add_argument("--expect", default=None, help="expectations file (YAML)")
    v.set_defaults(func=_verify)


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="harness", description=__doc__.splitlines()[0])
    sub = p.add_subparsers(dest="command", required=True)
    _add_machine_commands(sub)
    _add_run_commands(sub)
    _add_result_commands(sub)
    return p


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        apply_spark_flags(args)
        return args.func(args)
    except HarnessError as e:
        print(f"harness: {e}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("harness: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        # `harness list | head`: the reader has what it wanted; say nothing more
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0
    finally:
        _forget_handled_interrupts()


def _forget_handled_interrupts() -> None:
    """Keep our exit code after a Ctrl-C we handled.

    A KeyboardInterrupt that lands inside a string `exec` (dataclasses and namedtuple
    build their methods that way, so any import can be in one) sets CPython's
    "unhandled KeyboardInterrupt" flag, even when our code catches it later. At exit
    the interpreter then kills itself with SIGINT: `harness run` interrupted in
    cluster-up exited -2 instead of 2 in about one run in five. Every string `exec`
    clears the flag first, so an empty one forgets it.
    """
    exec("None")  # noqa: S102 - a constant; see the docstring


if __name__ == "__main__":
    sys.exit(main())
