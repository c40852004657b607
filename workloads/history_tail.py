"""Reading a live run's history as it grows: only the part files not read before.

Writers flush complete part files (tmp + rename, core/history.py), so a
file that is listed is whole. The warm-up and the live progress read the
history itself rather than asking the workload processes: store first.
"""
from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from core.history import part_files


class HistoryTail:
    def __init__(self, run_dir: str | os.PathLike, table: str, columns: list[str]):
        self.run_dir, self.table, self.columns = Path(run_dir), table, columns
        self._seen: set[str] = set()

    def poll(self) -> list[pa.Table]:
        """The rows of every part file written since the last poll."""
        return list(self.each_new())

    def each_new(self) -> Iterator[pa.Table]:
        """poll(), one part file at a time (a long run's history need not fit at once)."""
        for path in part_files(self.run_dir, self.table):
            if path.name in self._seen:
                continue
            self._seen.add(path.name)
            try:
                yield pq.read_table(path, columns=self.columns)
            except (OSError, pa.ArrowInvalid):
                self._seen.discard(path.name)      # renamed away or not readable yet: next poll
