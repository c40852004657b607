"""A run's phases as data: RUN_DIR/phases.json and one `phase` event per phase.

Each record is {name, start_us, end_us, outcome, error, detail}; outcome is
`ok`, `failed`, `interrupted` or `skipped`. The file is rewritten (tmp +
rename) after every phase, so a run killed at any moment leaves a readable
list that ends where it stopped; `interruption(run_dir)` reads it back.
"""
from __future__ import annotations

import json
import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from core.history import EventLog, now_us

OK, FAILED, INTERRUPTED, SKIPPED = "ok", "failed", "interrupted", "skipped"
PHASES_FILE = "phases.json"


def write_json(path: Path, data: Any) -> None:
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_text(json.dumps(data, indent=2, default=str) + "\n")
    os.replace(tmp, path)


class PhaseLog:
    def __init__(self, run_dir: Path, events: EventLog | None):
        self.path = Path(run_dir) / PHASES_FILE
        self.events = events
        self.records: list[dict[str, Any]] = []
        self.current: str | None = None

    @contextmanager
    def phase(self, name: str) -> Iterator[dict[str, Any]]:
        """Time one phase; the body may put results into the yielded `detail` dict."""
        record: dict[str, Any] = {"name": name, "start_us": now_us(), "end_us": None,
                                  "outcome": None, "error": None, "detail": {}}
        try:
            # Inside the try: a Ctrl-C while the start is being written still closes the record.
            self.records.append(record)
            self.current = name
            self._write()
            yield record["detail"]
            record["outcome"] = record["detail"].pop("_outcome", OK)
        except KeyboardInterrupt:
            record["outcome"], record["error"] = INTERRUPTED, "interrupted (Ctrl-C or SIGTERM)"
            raise
        except BaseException as e:
            record["outcome"], record["error"] = FAILED, f"{type(e).__name__}: {e}"
            raise
        finally:
            record["end_us"] = now_us()
            self.current = None
            self._write()
            if self.events is not None:
                self.events.emit("phase", name, None, ts_us=record["start_us"],
                                 end_us=record["end_us"], outcome=record["outcome"],
                                 error=record["error"], **record["detail"])
                self.events.flush()

    def skipped(self, name: str, why: str) -> None:
        t = now_us()
        self.records.append({"name": name, "start_us": t, "end_us": t, "outcome": SKIPPED,
                             "error": None, "detail": {"why": why}})
        self._write()

    def seconds(self, name: str) -> float | None:
        for r in self.records:
            if r["name"] == name and r["end_us"] is not None:
                return (r["end_us"] - r["start_us"]) / 1e6
        return None

    def _write(self) -> None:
        write_json(self.path, self.records)


def read_phases(run_dir: str | os.PathLike) -> list[dict[str, Any]] | None:
    path = Path(run_dir) / PHASES_FILE
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError):
        return None


def interruption(run_dir: str | os.PathLike) -> str | None:
    """Why a stored run's history cannot be judged ('interrupted in phase faults'),
    or None when its drain completed (or the run was not made by the runner)."""
    records = read_phases(run_dir)
    if records is None:
        return None
    # a drain that ran to its end but read less than all (a share drain or MirrorMaker 2's
    # catch-up incomplete: outcome failed, no error) was judged by its run: judge it alike
    drained = any(r["name"] == "drain" and (r["outcome"] == OK or (
        r["outcome"] == FAILED and not r.get("error"))) for r in records)
    if drained:
        return None
    try:        # the runner's own word, when it lived to write it (not after a kill -9)
        reason = json.loads((Path(run_dir) / "result.json").read_text()).get("reason")
    except (OSError, ValueError):
        reason = None
    if reason:
        return f"{reason}; no complete drain to judge against"
    stopped = next((r for r in records if r["outcome"] in (INTERRUPTED, FAILED, None)), None)
    if stopped is None:
        return "the run ended before its drain"
    how = {INTERRUPTED: "interrupted", FAILED: "failed"}.get(stopped["outcome"], "killed")
    error = f" ({stopped['error']})" if stopped.get("error") and how == "failed" else ""
    return f"{how} in phase {stopped['name']}{error}; no complete drain to judge against"
