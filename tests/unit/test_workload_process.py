"""Workload processes and Ctrl-C: the parent decides how its workers stop."""
from __future__ import annotations

import os
import signal
import time

from workloads.process import WorkerProcess


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
