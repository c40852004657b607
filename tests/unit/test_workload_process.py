"""Workload processes and Ctrl-C: the parent decides how its workers stop."""
from __future__ import annotations

import os
import signal
import threading
import time

import pytest

from workloads.process import StopCheck, WorkerProcess, run_worker


def _sleep_then_exit(stop_event, parent_pid, seconds):
    time.sleep(seconds)


def test_a_ctrl_c_while_a_worker_is_still_starting_does_not_kill_it():
    # Ctrl-C reaches the whole process group, the worker too, at any time after its
    # fork: before its entry point ran, Python's default handler made it exit 1.
    worker = WorkerProcess("w", _sleep_then_exit, 1.5).start()
    deadline = time.monotonic() + 1.0
    while time.monotonic() < deadline:
        try:
            os.kill(worker.pid, signal.SIGINT)
        except ProcessLookupError:
            break
        time.sleep(0.01)
    assert worker.join(30)
    assert worker.exitcode == 0


def test_starting_a_worker_leaves_the_parent_s_signal_mask_as_it_was():
    before = signal.pthread_sigmask(signal.SIG_BLOCK, set())
    WorkerProcess("w", _sleep_then_exit, 0.0).start().join(30)
    assert signal.pthread_sigmask(signal.SIG_BLOCK, set()) == before


def test_a_producer_that_dies_says_why_and_is_counted_once(tmp_path):
    """A real producer process whose client refuses its config (librdkafka raises):
    the worker writes `workload-died` with the error, the parent adds the exit code,
    and the checker counts one death, not two; a kill of ours is no death."""
    from core.context import RunContext
    from core.history import EventLog, read_table
    from core.timeline import parse_events
    from spark_reports.problems import workload_deaths
    from workloads.producer import ProducerProcess
    from workloads.spec import ProducerSpec

    events = EventLog(tmp_path, "r")
    run = RunContext("r", tmp_path, events, fixed_bootstrap="127.0.0.1:1")
    spec = ProducerSpec(name="p0", topic="t", records=10,
                        client_config={"no.such.property": "1"})
    dying = ProducerProcess(spec, run).start()
    assert dying.wait(60) and dying.exitcode == 1
    killed = ProducerProcess(spec.model_copy(update={"name": "p1", "client_config": {},
                                                     "records": None, "duration_s": 60}), run)
    killed.start()
    time.sleep(1.5)
    killed.kill()
    events.close()
    rows = read_table(tmp_path, "events").to_pylist()
    [death] = workload_deaths(parse_events(rows, None))
    assert (death["workload"], death["kind"], death["exitcode"]) == ("p0", "producer", 1)
    assert "no.such.property" in death["error"]


class _Worker:
    def __init__(self, fails: BaseException | None):
        self.fails, self.calls = fails, []

    def run(self, stop_event, parent_pid):
        self.calls.append("run")
        if self.fails is not None:
            raise self.fails

    def close(self):
        self.calls.append("close")


def test_a_worker_that_ends_on_an_error_records_its_death_then_raises_and_closes():
    emitted = []
    w = _Worker(ValueError("boom"))
    with pytest.raises(ValueError):
        run_worker(w, None, os.getpid(), "consumer",
                   lambda name, **d: emitted.append((name, d, list(w.calls))))
    [(name, detail, calls_then)] = emitted
    assert name == "workload-died" and detail["workload"] == "consumer"
    assert detail["error"] == "ValueError: boom" and calls_then == ["run"]   # before close
    assert w.calls == ["run", "close"]


def test_a_worker_that_stops_cleanly_records_nothing_and_is_closed():
    emitted = []
    w = _Worker(None)
    run_worker(w, None, os.getpid(), "pipeline-processor", lambda *a, **d: emitted.append(a))
    assert emitted == [] and w.calls == ["run", "close"]


def test_the_stop_check_looks_at_the_stop_event_once_per_interval_at_most():
    stop = threading.Event()
    stopping = StopCheck(stop, os.getppid(), every_s=0.05)
    stop.set()
    assert not stopping()                  # asked again within the interval: not looked at
    time.sleep(0.06)
    assert stopping()


def test_the_stop_check_stops_when_the_parent_is_gone():
    stopping = StopCheck(threading.Event(), os.getppid() + 1_000_000, every_s=0.0)
    time.sleep(0.001)
    assert stopping()
