"""The workload phases: each family the scenario names starts its clients (families/,
e.g. families/records/clients.py: consumer groups, producers, Kafka's Java clients);
the warm-up waits for them; the final drain reads every partition.

The started clients are stopped on the run's finalizers by one `workloads-stop`:
gracefully on the normal path (producers end their duration, consumers catch up),
quickly when the run was interrupted or failed.
"""
from __future__ import annotations

import time

import pyarrow.compute as pc

from core.errors import HarnessError
from core.history import LOAD_CUT, now_us
from families import named_by
from harness.run import Run
from harness.run.phases import FAILED
from workloads.drain import drain as drain_all
from workloads.history_tail import HistoryTail

# -- the phases ------------------------------------------------------------------------

def start(run: Run, detail: dict) -> None:
    """workloads-start: each named family's clients entered on the run's finalizers
    (one `workloads-stop` stops them all, newest first); the stop is graceful unless
    the run stopped early."""
    section, started = run.scenario.workload, {}
    run.ctx.finalizers.push("workloads-stop", lambda: _stop(started, run.stopped_in is None))
    for family in sorted(named_by(section), key=lambda f: not f.before_load):
        if family.start is not None:
            started[family.name] = family.start(run.ctx, section).__enter__()
    run.clients = started
    load = run.load
    detail.update(families=[f.name for f in named_by(section)],
                  producers=[p.spec.name for p in load.producers] if load else [],
                  groups=[g.spec.group_id for g in load.groups] if load else [],
                  java=len(load.java) if load else 0)


def _stop(started: dict, graceful: bool) -> None:
    for clients in reversed(list(started.values())):
        clients.stop(graceful=graceful)


def warm_up(run: Run, detail: dict) -> None:
    """Until every partition written to has its first ack, and every family's clients say
    they are ready (a share group has received its first records): faults before then
    would hit a workload that has not started, and tell nothing."""
    s = run.scenario
    want = set(s.written_partitions)
    tail = HistoryTail(run.ctx.run_dir, "produced", ["topic", "partition", "status"])
    acked: set = set()
    deadline = time.monotonic() + s.workload.warmup_timeout_s
    while not (want <= acked and _ready(run)):
        for batch in tail.poll():
            rows = batch.filter(pc.equal(batch["status"], "acked"))
            acked |= set(zip(rows["topic"].to_pylist(), rows["partition"].to_pylist(), strict=True))
        for clients in run.clients.values():
            clients.check()
        if time.monotonic() > deadline:
            if not want <= acked:
                raise HarnessError(f"no ack on {sorted(want - acked)[:5]} after "
                                   f"{s.workload.warmup_timeout_s:g} s: the cluster takes no writes")
            raise HarnessError(f"after {s.workload.warmup_timeout_s:g} s, not ready: "
                               f"{'; '.join(_not_ready(run))}")
        time.sleep(0.25)
    detail["partitions"] = len(want)


def _not_ready(run: Run) -> list[str]:
    """What each family's clients still wait for (a client without `not_ready` is ready)."""
    return [why for clients in run.clients.values()
            for why in (getattr(clients, "not_ready", lambda: [])())]


def _ready(run: Run) -> bool:
    return not _not_ready(run)


def stop(run: Run, detail: dict) -> None:
    _cut_load(run, detail)
    run.ctx.finalizers.run("workloads-stop")
    detail["producers"] = {p.spec.name: {"exitcode": p.exitcode,
                                         "indeterminate_written": p.result.indeterminate
                                         if p.result else None} for p in run.load.producers}


def _cut_load(run: Run, detail: dict) -> None:
    """workload.end_after_faults_s: this phase follows heal-all and recovery-wait, so
    the faults are done; the load ends that long from now if that is before its
    duration, and the history says when (the load plan is judged to then)."""
    after = run.scenario.workload.end_after_faults_s
    begun = [r["start_us"] for r in run.phases.records if r["name"] == "workloads-start"]
    if after is None or not begun:
        return
    cut_us = now_us() + int(after * 1e6)
    if cut_us >= begun[0] + int(run.scenario.workload.duration_s * 1e6):
        return
    run.ctx.load_cut_at = time.monotonic() + after
    if run.ctx.events is not None:
        run.ctx.events.emit("phase", LOAD_CUT, ts_us=cut_us, after_faults_s=after)
    detail["load_cut_after_s"] = after


def drain(run: Run, detail: dict) -> None:
    """The final drain reads every partition; then each family with a drain of its own
    (the share groups' final share drain) runs it."""
    result = drain_all(run.scenario.drain, run.ctx)
    detail.update(records=result.records, partitions=result.partitions,
                  complete=result.complete, seconds=result.seconds)
    if not result.complete:
        detail.update(incomplete=result.incomplete, _outcome=FAILED)
    for name, clients in run.clients.items():
        family_drain = getattr(clients, "drain", None)
        if family_drain is not None:
            detail[name] = family_drain()
            if not all(g.get("complete") for g in detail[name].values()):
                detail["_outcome"] = FAILED
