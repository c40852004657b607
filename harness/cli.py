"""The `harness` command line.

Subcommands are thin: each parses its arguments and hands them to the package
that owns the work. Exit codes everywhere: 0 ok, 1 a check failed (a verdict
with violations, `doctor` finding something missing), 2 bad input or the
harness could not do what was asked.
"""
from __future__ import annotations

import argparse
import sys

from harness.errors import HarnessError


def _doctor(args: argparse.Namespace) -> int:
    from harness.doctor import run_doctor
    return run_doctor(verbose=args.verbose)


def _gc(args: argparse.Namespace) -> int:
    from clusters.gc import collect_garbage
    removed = collect_garbage(all_runs=args.all, dry_run=args.dry_run)
    verb = "would remove" if args.dry_run else "removed"
    print(f"gc: {verb} {removed.containers} containers, {removed.networks} networks, "
          f"{removed.volumes} volumes")
    return 0


def _images(args: argparse.Namespace) -> int:
    from clusters.images import build_all
    build_all(force=args.force, versions=args.version or None)
    return 0


def _verify(args: argparse.Namespace) -> int:
    from verifiers.cli import verify_command
    return verify_command(args.run_dir, spark_master=args.spark_master, expect=args.expect)


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="harness", description=__doc__.splitlines()[0])
    sub = p.add_subparsers(dest="command", required=True)

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
    ib = isub.add_parser("build", help="build every image (cached by content hash)")
    ib.add_argument("--force", action="store_true", help="rebuild even if cached")
    ib.add_argument("--version", action="append",
                    help="only this Kafka version (repeatable)")
    ib.set_defaults(func=_images)

    v = sub.add_parser("verify", help="reconcile a stored run and write its report")
    v.add_argument("run_dir")
    v.add_argument("--spark-master", default=None, help="Spark master URL (default local[*])")
    v.add_argument("--expect", default=None, help="expectations file (YAML)")
    v.set_defaults(func=_verify)
    return p


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return args.func(args)
    except HarnessError as e:
        print(f"harness: {e}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("harness: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
