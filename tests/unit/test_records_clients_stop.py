"""The records family's clients stop gracefully at the workload's duration: Kafka's Java
producers too, when no producer of ours sets the pace (the load used to end with the
faults then, and such a run would be judged short)."""
from __future__ import annotations

import threading
import time
from types import SimpleNamespace

from families.records.clients import Workloads
from families.workload import Workload


def test_a_java_only_load_runs_its_duration_before_it_is_told_to_stop(tmp_path):
    load = Workloads(SimpleNamespace(events=None, run_dir=tmp_path), Workload(duration_s=1.5))
    told: list[float] = []

    def java_producer():            # as run_java_producer: runs until should_stop()
        load.java_producers_stop.wait(10)
        told.append(time.monotonic())

    t = threading.Thread(target=java_producer, daemon=True)
    t.start()
    load.java.append(t)
    load.java_producers.append(t)
    load.started_at = time.monotonic()
    load.stop(graceful=True)
    assert told and told[0] - load.started_at >= 1.4
    # interrupted: told at once
    quick = Workloads(SimpleNamespace(events=None, run_dir=tmp_path), Workload(duration_s=30))
    quick.started_at = time.monotonic()
    t0 = time.monotonic()
    quick.stop(graceful=False)
    assert quick.java_stop.is_set() and quick.java_producers_stop.is_set()
    assert time.monotonic() - t0 < 5
