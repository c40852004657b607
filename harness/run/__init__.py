"""One run as the runner keeps it: the shared RunContext, the scenario, the phase log,
and a handle on each resource its phases made (harness/run/runner.py lists where each is
created and removed). Workloads, faults and the verifier receive the RunContext, never
this record.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from clusters.observer import MetadataObserver
from core.context import RunContext
from harness.run.phases import INTERRUPTED, PhaseLog
from harness.scenario import Scenario
from spark_reports.summary import Summary
from verifiers.verify import VerifyResult


# What the runner needs of the resources its phases make (families/records/clients.py,
# run_faults.py, progress.py define them; they import this module, not the reverse).
class Display(Protocol):
    def say(self, message: str) -> None: ...
    def stop(self) -> None: ...


class Load(Protocol):
    started_at: float | None
    producers: list

    def check(self) -> None: ...


class FaultsInPlay(Protocol):
    report: Any                      # faults.healall.HealAllReport, once heal-all ran
    context: Any                     # faults.base.FaultContext

    def active(self) -> list: ...
    def plan(self) -> list: ...


@dataclass
class RunResult:
    run_id: str
    run_dir: Path
    exit_code: int
    status: str                         # passed, failed, unknown
    reason: str | None = None
    summary: Summary | None = None      # report/summary.json, typed
    phases: list[dict[str, Any]] = field(default_factory=list)
    interrupted: bool = False           # Ctrl-C or SIGTERM: a suite or compare stops too


@dataclass
class Run:
    ctx: RunContext
    scenario: Scenario
    phases: PhaseLog
    progress: Display | None = None
    observer: MetadataObserver | None = None
    clients: dict[str, Any] = field(default_factory=dict)   # family name -> its started clients
    faults: FaultsInPlay | None = None
    verified: VerifyResult | None = None
    stopped_in: str | None = None       # the phase an interruption or an error ended
    stop_reason: str | None = None
    # Set when the experiment did not happen as planned through the user's own doing (an
    # exec fault's command failed): the run is judged and reported, and exits 2 with this.
    not_as_planned: str | None = None

    @property
    def load(self) -> Load | None:
        """The records family's clients: the producers the faults and the progress ask
        about."""
        return self.clients.get("records")

    def say(self, message: str) -> None:
        if self.progress is not None:
            self.progress.say(message)
        else:
            print(message, flush=True)

    def close_progress(self) -> None:
        if self.progress is not None:
            self.progress.stop()

    def result(self) -> RunResult:
        ctx, v = self.ctx, self.verified
        if self.stopped_in is not None:
            how = "interrupted" if self.stop_reason == INTERRUPTED else "failed"
            reason = f"{how} in phase {self.stopped_in}" + (
                "" if self.stop_reason == INTERRUPTED else f": {self.stop_reason}")
            result = RunResult(ctx.run_id, ctx.run_dir, 2, "unknown", reason,
                               interrupted=self.stop_reason == INTERRUPTED)
        elif v is None:
            result = RunResult(ctx.run_id, ctx.run_dir, 0, "not verified",
                               "verification skipped (--no-verify)")
        elif self.not_as_planned is not None:
            result = RunResult(ctx.run_id, ctx.run_dir, 2, "unknown", self.not_as_planned, v.summary)
        else:
            result = RunResult(ctx.run_id, ctx.run_dir, v.verdict.exit_code, v.verdict.status,
                               v.verdict.reason, v.summary)
        result.phases = self.phases.records
        return result
