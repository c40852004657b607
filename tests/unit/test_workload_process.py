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
