"""Live progress of a run: a `rich` panel on a terminal, plain lines in CI.

Numbers come from the history as it is written (workloads.history_tail), the
phase from the phase log, the active faults from the run's faults, the leader
from the metadata observer (harness.run.Run holds them): the display only reads.
"""
from __future__ import annotations

import sys
import threading
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from rich.console import Console
from rich.live import Live
from rich.panel import Panel
from rich.table import Table

from faults.selectors import selector_refs
from workloads.history_tail import HistoryTail

if TYPE_CHECKING:
    from harness.run import Run

PLAIN_INTERVAL_S = 10.0
STATUSES = ("acked", "failed", "indeterminate")


@dataclass
class Rates:
    """Totals and per-second rates over the last refresh."""
    totals: dict[str, int] = field(default_factory=lambda: dict.fromkeys(
        ("sent", *STATUSES, "consumed"), 0))
    per_s: dict[str, float] = field(default_factory=dict)
    _last: tuple[float, dict[str, int]] | None = None

    def add(self, produced: list, consumed: list) -> None:
        for batch in produced:
            self.totals["sent"] += batch.num_rows
            for status, n in zip(*_value_counts(batch, "status"), strict=True):
                if status in STATUSES:
                    self.totals[status] += n
        self.totals["consumed"] += sum(b.num_rows for b in consumed)
        now = time.monotonic()
        if self._last is not None and now > self._last[0]:
            dt = now - self._last[0]
            self.per_s = {k: (v - self._last[1][k]) / dt for k, v in self.totals.items()}
        self._last = (now, dict(self.totals))


def _value_counts(batch, column: str):
    counts = batch[column].value_counts()
    return counts.field("values").to_pylist(), counts.field("counts").to_pylist()


def watched_partition(scenario) -> tuple[str, int]:
    """The partition the faults aim at (the first a fault names), for the leader column."""
    for entry in scenario.faults.timeline:
        refs = selector_refs(entry.target) if entry.target is not None else []
        if refs:
            return refs[0]
    if scenario.faults.nemesis is not None:
        return scenario.faults.nemesis.topic, scenario.faults.nemesis.partition
    return scenario.topics[0].name, 0


class Progress:
    def __init__(self, run: "Run", plain: bool):
        self.run, self.plain = run, plain
        self.rates = Rates()
        self._produced = HistoryTail(run.ctx.run_dir, "produced", ["status"])
        self._consumed = HistoryTail(run.ctx.run_dir, "consumed", ["phase"])
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._live = None
        self._started = time.monotonic()

    def start(self) -> None:
        if not self.plain:
            self._live = Live(self._render(), console=Console(), refresh_per_second=2,
                              transient=True)
            self._live.start()
        self._thread = threading.Thread(target=self._loop, name="progress", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(5)
        if self._live is not None:
            self._live.stop()
            self._live = None

    def say(self, message: str) -> None:
        if self._live is not None:
            self._live.console.print(message)
        else:
            print(message, flush=True)

    def _loop(self) -> None:
        last_plain, last_phase = 0.0, None
        while not self._stop.wait(1.0):
            try:
                self.rates.add(self._produced.poll(), self._consumed.poll())
            except Exception:  # noqa: BLE001 - a display must never end a run
                continue
            phase = self.run.phases.current
            if self._live is not None:
                self._live.update(self._render())
            elif phase != last_phase or time.monotonic() - last_plain >= PLAIN_INTERVAL_S:
                print(self.line(), flush=True)
                last_plain, last_phase = time.monotonic(), phase

    # -- what is shown ----------------------------------------------------------
    def facts(self) -> dict[str, str]:
        run, r = self.run, self.rates
        elapsed = time.monotonic() - self._started
        load = run.load.started_at if run.load is not None else None
        remaining = ""
        if load is not None:
            left = run.scenario.workload.duration_s - (time.monotonic() - load)
            remaining = f", load {max(0.0, left):.0f} s left"
        ps = r.per_s
        # a fault whose inject failed stays registered until its heal runs: not in effect
        active = [f for f in (run.faults.active() if run.faults is not None else [])
                  if not f.detail.get("inject_error")]
        topic, partition = watched_partition(self.run.scenario)   # as run (external: prefixed)
        leader = run.observer.leader(topic, partition) if run.observer is not None else None
        return {
            "phase": f"{run.phases.current or '-'} ({elapsed:.0f} s{remaining})",
            "sent": f"{r.totals['sent']} ({ps.get('sent', 0):.0f}/s)",
            "acked": f"{r.totals['acked']} ({ps.get('acked', 0):.0f}/s)",
            "failed": f"{r.totals['failed']} ({ps.get('failed', 0):.0f}/s)",
            "indeterminate": f"{r.totals['indeterminate']} ({ps.get('indeterminate', 0):.0f}/s)",
            "consumed": f"{r.totals['consumed']} ({ps.get('consumed', 0):.0f}/s)",
            "fault": ", ".join(f"{f.name} on {_where(f)}" for f in active) or "none",
            f"leader {topic}-{partition}": str(leader if leader is not None else "-"),
        }

    def line(self) -> str:
        return "[run] " + "; ".join(f"{k} {v}" for k, v in self.facts().items())

    def _render(self):
        table = Table.grid(padding=(0, 2))
        for key, value in self.facts().items():
            table.add_row(key, value)
        return Panel(table, title=f"harness run {self.run.ctx.run_id} "
                                  f"({self.run.scenario.name})")


def make_progress(run: "Run", mode: str) -> Progress | None:
    if mode == "none":
        return None
    plain = mode == "plain" or not sys.stdout.isatty()
    return Progress(run, plain)


def _where(fault) -> str:
    """What an active fault acts on: its nodes, else (a link toxic) its proxies."""
    names = [n.name for n in fault.targets] or list(fault.detail.get("proxies") or [])
    return ",".join(names) or "?"
