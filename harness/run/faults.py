"""The run's faults: their context, the timeline that plays the scenario's plan, and
heal-all, made and undone side by side here.

`arm` (at workloads-start, after the workloads are entered) makes the FaultRun and
pushes heal-all on the run's finalizers: pushed after the workloads, it runs before
they stop, so faults are healed first however the run ends. The faults phase plays
the plan; the heal-all phase runs that finalizer on the normal path.
"""
from __future__ import annotations

import time

from core.context import RunContext
from faults.base import wait_full_isr
from faults.context import context_for
from faults.healall import heal_all, leftovers
from harness.run import Run
from harness.run.fault_timeline import FaultTimeline, plan_faults
from harness.run.phases import FAILED, write_json


class FaultRun:
    """The fault layer's view of the run (faults.context: the cluster, events and a
    seeded rng of the RunContext), the fault timeline once it plays, and what heal-all
    found."""

    def __init__(self, ctx: RunContext):
        self.context = context_for(ctx.cluster, ctx.events, rng=ctx.rng("faults"))
        self.timeline = None
        self.report = None

    def play(self, scenario) -> list:
        """Every planned fault on its own timer; returns the plan as it went."""
        plan = plan_faults(scenario, scenario.seed)
        self.timeline = FaultTimeline(self.context, plan).start()
        last = max((p.at_s + (p.hold_s or 0) for p in plan), default=0.0)
        self.timeline.wait(last + 600.0)
        return plan

    def active(self) -> list:
        return self.timeline.active() if self.timeline is not None else []

    def plan(self) -> list:
        return self.timeline.plan if self.timeline is not None else []

    def heal_all(self, reason: str) -> None:
        """Stop the timers that have not fired, then heal and sweep everything."""
        if self.timeline is not None:
            self.timeline.finish(join_s=30.0)
        self.report = heal_all(self.context, reason)


def arm(run: Run, detail: dict) -> None:
    faults = FaultRun(run.ctx)
    # what `txn_coordinator_of: {producer: p0}` asks FindCoordinator about
    faults.context.transactional_ids = {p.spec.name: p.txn_id for p in run.load.producers
                                        if p.txn_id}
    # the topic `share_coordinator_of: {group: g}` means when it names none
    faults.context.share_group_topics = {g.group_id: list(g.topics)
                                         for g in run.scenario.workload.share_groups}
    # what the families run beside the cluster that a fault may act on: another cluster
    # (a mirror's target: a selector's `cluster: target`), a process (MirrorMaker 2)
    for clients in run.clients.values():
        for name, cluster in getattr(clients, "fault_clusters", dict)().items():
            faults.context.others[name] = context_for(cluster, run.ctx.events,
                                                      rng=run.ctx.rng(f"faults-{name}"))
        faults.context.processes.update(getattr(clients, "fault_processes", dict)())
        # transactional producers a family runs itself (a pipeline's instance slots)
        ids, prefixes = getattr(clients, "fault_transactional_ids", lambda: ({}, {}))()
        faults.context.transactional_ids.update(ids)
        faults.context.transactional_id_prefixes.update(prefixes)
    run.ctx.finalizers.push("heal-all", lambda: faults.heal_all(run.stop_reason or "completed"))
    run.faults = faults


# -- the phases ------------------------------------------------------------------------

def play(run: Run, detail: dict) -> None:
    plan = run.faults.play(run.scenario)
    detail["faults"] = [p.to_dict() for p in plan]
    write_json(run.ctx.run_dir / "faults.json", detail["faults"])
    errors = [f"{p.label}: {p.error}" for p in plan if p.error]
    if errors:
        detail["errors"] = errors
    failed = [p for p in plan if p.error and p.label.endswith(" exec")]
    if failed:
        p = failed[0]
        run.not_as_planned = (f"faults.{p.label.split()[0]}.params: the exec command failed, so the "
                              f"fault did not happen as planned ({p.error[:300]}) (fix: check the "
                              "command and its permissions; `harness run --dry-run` prints it)")


def heal(run: Run, detail: dict) -> None:
    run.ctx.finalizers.run("heal-all")
    report = run.faults.report
    if report is not None:
        detail.update(healed=report.healed, unhealed=report.unhealed, swept=len(report.swept))
    left = leftovers(run.faults.context)
    if left or (report is not None and report.unhealed):
        detail.update(leftovers=left, _outcome=FAILED)


def recovery_wait(run: Run, detail: dict) -> None:
    started = time.monotonic()
    try:
        wait_full_isr(run.ctx.cluster, run.scenario.faults.recovery_timeout_s)
    except TimeoutError as e:
        detail.update(error=str(e), _outcome=FAILED)
    detail["seconds"] = round(time.monotonic() - started, 3)
