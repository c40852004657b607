"""The records family's clients stop gracefully at the workload's duration: Kafka's Java
producers too, when no producer of ours sets the pace (the load used to end with the
faults then, and such a run would be judged short)."""
from __future__ import annotations

import threading
import time

from core.context import RunContext
from core.history import HistoryWriter
from families.records.clients import CATCH_UP_QUIET_S, Workloads, caught_up
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


def _write(run_dir, table: str, rows: list[dict]) -> None:
    with HistoryWriter(run_dir, table, "r") as w:
        for row in rows:
            w.append(row)


def _acked(topic: str, partition: int, offset: int, status: str = "acked") -> dict:
    return {"producer": "p0", "seq": offset, "record_id": f"p0-{offset}", "topic": topic,
            "partition": partition, "offset": offset, "status": status}


def _read(group: str, topic: str, partition: int, offset: int) -> dict:
    return {"consumer": "c0", "group_id": group, "phase": "live", "topic": topic,
            "partition": partition, "offset": offset}


def test_the_groups_are_caught_up_once_each_read_every_partitions_last_acked_record():
    acked = {("t", 0): 9, ("t", 1): 4}
    both = {"g0": {"t"}, "g1": {"t"}}
    assert caught_up(acked, {("g0", "t", 0): 9, ("g0", "t", 1): 4, ("g1", "t", 0): 12, ("g1", "t", 1): 4}, both)
    assert not caught_up(acked, {("g0", "t", 0): 9, ("g0", "t", 1): 4, ("g1", "t", 0): 9}, both)
    assert not caught_up(acked, {("g0", "t", 0): 8, ("g0", "t", 1): 4}, {"g0": {"t"}})
    # a topic none of our producers acked a record on (a pipeline's output): cannot tell
    assert not caught_up(acked, {("g0", "t", 0): 9, ("g0", "t", 1): 4}, {"g0": {"t", "out"}})
    assert not caught_up(acked, {}, {})


def test_the_catch_up_ends_when_the_groups_have_read_the_last_acked_records_not_after_quiet(tmp_path):
    _write(tmp_path, "produced", [_acked("t", 0, o) for o in range(10)] + [_acked("t", 1, 3)]
           + [_acked("t", 1, 7, status="error")])             # not acked: nobody waits for it
    _write(tmp_path, "consumed", [_read("g0", "t", 0, o) for o in range(10)] + [_read("g0", "t", 1, 3)])
    load = Workloads(RunContext("r", tmp_path, None),
                     Workload(duration_s=1, consumers=[{"group_id": "g0", "topics": ["t"]}]))
    t0 = time.monotonic()
    load._catch_up()
    assert time.monotonic() - t0 < CATCH_UP_QUIET_S
    # one record short on t-1: the quiet rule ends it, as before
    _write(tmp_path, "produced", [_acked("t", 1, 8)])
    t0 = time.monotonic()
    load._catch_up()
    assert time.monotonic() - t0 >= CATCH_UP_QUIET_S
