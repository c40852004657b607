"""The records family's clients stop gracefully at the workload's duration: Kafka's Java
producers too, when no producer of ours sets the pace (the load used to end with the
faults then, and such a run would be judged short)."""
from __future__ import annotations

import threading
import time

from core.context import RunContext
from families.records.clients import Workloads
from families.workload import Workload


def _told_at(load: Workloads) -> list[float]:
    told: list[float] = []

    def java_producer():            # as run_java_producer: runs until should_stop()
        load.java_producers_stop.wait(10)
        told.append(time.monotonic())

    t = threading.Thread(target=java_producer, daemon=True)
    t.start()
    load.java.append(t)
    load.java_producers.append(t)
    load.started_at = time.monotonic()
    return told


def test_a_java_only_load_runs_its_duration_before_it_is_told_to_stop(tmp_path):
    load = Workloads(RunContext("r", tmp_path, None), Workload(duration_s=1.5))
    told = _told_at(load)
    load.stop(graceful=True)
    assert told and told[0] - load.started_at >= 1.4
    # interrupted: told at once
    quick = Workloads(RunContext("r", tmp_path, None), Workload(duration_s=30))
    quick.started_at = time.monotonic()
    t0 = time.monotonic()
    quick.stop(graceful=False)
    assert quick.java_stop.is_set() and quick.java_producers_stop.is_set()
    assert time.monotonic() - t0 < 5


def test_a_load_the_run_cuts_is_told_to_stop_at_the_cut_not_its_duration(tmp_path):
    ctx = RunContext("r", tmp_path, None)
    load = Workloads(ctx, Workload(duration_s=30))
    told = _told_at(load)
    ctx.load_cut_at = load.started_at + 1.0          # end_after_faults_s, as the runner sets it
    load.stop(graceful=True)
    assert told and 0.9 <= told[0] - load.started_at < 10
