"""One evidence matrix's results.tsv (cell, exit code, run dir, time; one run per line,
as each matrix's run.sh appends them) as a Markdown table, a row per run."""
from __future__ import annotations

from collections.abc import Callable
from pathlib import Path


def print_table(results_tsv: str, columns: list[str], row: Callable[[str, str, str], str]) -> None:
    """The header of `columns`, then `row(cell, exit code, run dir)` for each run."""
    print("| " + " | ".join(columns) + " |")
    print("|" + "---|" * len(columns))
    for line in Path(results_tsv).read_text().splitlines():
        cell, rc, run_dir, _ = line.split("\t")
        print(row(cell, rc, run_dir))
