"""The flags several subcommands share, declared once (argparse parent parsers), and
the one typed options object the commands read instead of argparse's Namespace."""
from __future__ import annotations

import argparse
import os
from dataclasses import dataclass
from pathlib import Path

from core.errors import HarnessError


def _parent(*flags: tuple[tuple[str, ...], dict]) -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(add_help=False)
    for names, kw in flags:
        p.add_argument(*names, **kw)
    return p


SET = _parent((("--set",), dict(dest="overrides", action="append", default=[], metavar="KEY=VALUE",
                                help="override a field, e.g. --set cluster.brokers=5 --set "
                                     "producer.acks=1 (repeatable)")))
SEED = _parent((("--seed",), dict(type=int, default=None,
                                  help="fix every random choice (a compare's or suite's first run)")))
SPARK = _parent(
    (("--spark-mode",), dict(default=None, choices=("server", "local"),
                             help="server (default): verify on the local Spark Connect server, "
                                  "started on first use and kept warm (`harness spark status`); "
                                  "local: in a Spark session of this process (HARNESS_SPARK_MODE)")),
    (("--spark-remote",), dict(default=None, metavar="sc://HOST:PORT",
                               help="verify on a Spark Connect server you run; it must be able to "
                                    "read the run directory's path (HARNESS_SPARK_REMOTE)")),
    (("--spark-master",), dict(default=None,
                               help="a classic Spark cluster's master URL (spark://..., yarn)")))
PROGRESS = _parent((("--plain",), dict(action="store_true",
                                       help="plain progress lines, even on a terminal")))
RUN_OUTPUT = _parent(
    (("--runs-dir",), dict(type=Path, default=Path("runs"),
                           help="where run directories go (default runs/)")),
    (("--no-verify",), dict(action="store_true", help="store the history, do not judge it")),
    (("--dry-run",), dict(action="store_true", help="validate and print the resolved scenario "
                          "(and the commands exec faults would run); start nothing")))


def apply_spark_flags(args: argparse.Namespace) -> None:
    """--spark-mode and --spark-remote, for spark_reports.session, which reads them (and
    the variables a user may set instead) from the environment: one place, whichever
    command verifies."""
    a = vars(args)
    if a.get("spark_mode"):
        os.environ["HARNESS_SPARK_MODE"] = a["spark_mode"]
    if a.get("spark_remote"):
        if not a["spark_remote"].startswith("sc://"):
            raise HarnessError(f"--spark-remote {a['spark_remote']}: expected a Spark Connect "
                               "URL, sc://host:port (a classic cluster: --spark-master)")
        os.environ["HARNESS_SPARK_REMOTE"] = a["spark_remote"]


# what a command that runs scenarios takes
RUNNING = (SET, SEED, RUN_OUTPUT, SPARK, PROGRESS)


@dataclass(frozen=True)
class Options:
    """What the flags say, typed (a flag a command does not take keeps its default)."""
    scenario: str | None = None
    overrides: tuple[str, ...] = ()
    seed: int | None = None
    runs_dir: Path = Path("runs")
    verify: bool = True
    dry_run: bool = False
    watch: bool = False
    spark_master: str | None = None
    progress: str = "auto"                   # "plain": plain lines, even on a terminal

    @classmethod
    def of(cls, args: argparse.Namespace) -> "Options":
        a = vars(args)
        return cls(scenario=a.get("scenario"), overrides=tuple(a.get("overrides") or ()),
                   seed=a.get("seed"), runs_dir=Path(a.get("runs_dir") or "runs"),
                   verify=not a.get("no_verify", False), dry_run=bool(a.get("dry_run")),
                   watch=bool(a.get("watch")), spark_master=a.get("spark_master"),
                   progress="plain" if a.get("plain") else "auto")
