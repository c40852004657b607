"""Workload processes: started with 'spawn', never left running.

Each producer or consumer runs in its own process so both cores are used and a
scenario can SIGKILL one as a fault. Three nets make sure none outlives us:
the parent kills every live worker at exit (atexit), workers are daemonic
(multiprocessing terminates them when the parent exits normally), and every
worker polls its parent pid and exits by itself when the parent is gone
(a SIGKILLed harness).
"""
from __future__ import annotations

import atexit
import multiprocessing as mp
import os
import signal
import threading
import time
import traceback
from collections.abc import Callable
from typing import Any, Protocol

from core.history import WORKLOAD_DIED

# The exit code of a worker that hit a fatal client error and, by its policy, asks its
# supervisor for a new incarnation (workloads/producer_churn.py): not a death.
FATAL_RESTART_EXIT = 75
_CTX = mp.get_context("spawn")     # never fork a process that runs librdkafka threads
_LIVE: "set[WorkerProcess]" = set()      # strong refs: a dropped handle is still reaped
_LIVE_LOCK = threading.Lock()


def _child_main(log_path: str | None, target: Callable[..., Any], *args: Any) -> None:
    """Child entry: the client library's own log lines (librdkafka writes them to
    stderr) go to a file in the run dir, not over the harness's progress display.
    Ctrl-C reaches the whole process group; the parent decides how its workers
    stop (stop_event, then SIGKILL), so they ignore it."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    if log_path is not None:
        fd = os.open(log_path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
        os.dup2(fd, 1)
        os.dup2(fd, 2)
        os.close(fd)
    target(*args)


class WorkerProcess:
    """A child process running `target(stop_event, parent_pid, *args)`; its stdout and
    stderr go to `log_path` when given."""

    def __init__(self, name: str, target: Callable[..., Any], *args: Any,
                 log_path: str | os.PathLike | None = None):
        self.name = name
        self.killed = False                 # kill() was called: its exit is ours, not a death
        self.stop_event = _CTX.Event()
        self._proc = _CTX.Process(target=_child_main, name=name, daemon=True,
                                  args=(str(log_path) if log_path else None, target,
                                        self.stop_event, os.getpid(), *args))

    @property
    def pid(self) -> int | None:
        return self._proc.pid

    @property
    def exitcode(self) -> int | None:
        return self._proc.exitcode

    @property
    def died(self) -> bool:
        """It ended on its own with an error (an exception, a signal we did not send):
        not a clean end, and not a kill of ours (a churn, a stop that timed out)."""
        return self.exitcode not in (None, 0) and not self.killed

    def start(self) -> "WorkerProcess":
        # A spawned child takes about a second to reach `_child_main`; a Ctrl-C to the
        # process group in that time killed it with a traceback (exit 1), and the run
        # said "producer exited" instead of "interrupted". The blocked mask is inherited
        # through fork and exec; here it only defers a Ctrl-C to the line after start.
        blocked = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
        try:
            self._proc.start()
        finally:
            signal.pthread_sigmask(signal.SIG_SETMASK, blocked)
        with _LIVE_LOCK:
            _LIVE.add(self)
        return self

    def is_alive(self) -> bool:
        return self._proc.is_alive()

    def join(self, timeout: float | None = None) -> bool:
        """Wait for the process to end; True if it has."""
        self._proc.join(timeout)
        if self._proc.is_alive():
            return False
        with _LIVE_LOCK:
            _LIVE.discard(self)
        return True

    def request_stop(self) -> None:
        """Ask the worker to finish cleanly, without waiting (stop() waits)."""
        self.stop_event.set()

    def stop(self, timeout: float = 30.0) -> int | None:
        """Ask the worker to finish cleanly; SIGKILL it if it does not in `timeout`."""
        self.stop_event.set()
        if not self.join(timeout):
            self.kill()
        return self.exitcode

    def kill(self) -> int | None:
        """SIGKILL (a crash, as a fault or as the last resort) and reap."""
        self.killed = self.killed or self._proc.exitcode is None
        if self._proc.pid is not None and self._proc.is_alive():
            try:
                os.kill(self._proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        self.join(10)
        return self.exitcode


def died_detail(e: BaseException) -> dict[str, Any]:
    """What a dying worker says of itself: the error, and whether the client called it
    fatal (a KafkaError's own flag)."""
    err = e.args[0] if e.args else None
    fatal = err.fatal() if hasattr(err, "fatal") else None
    return {"error": f"{type(e).__name__}: {e}"[:500], "fatal": fatal,
            "where": "".join(traceback.format_exception(e)[-3:])[-800:]}


class StopCheck:
    """What a worker's loop asks each turn: stop now? True once its stop event is set or
    its parent is gone; both are looked at once per `every_s` at most (a turn is far
    shorter, and the parent's pid costs a system call)."""

    def __init__(self, stop_event: Any, parent_pid: int, every_s: float = 0.2):
        self.stop_event, self.parent_pid, self.every_s = stop_event, parent_pid, every_s
        self._last = time.monotonic()

    def __call__(self) -> bool:
        now = time.monotonic()
        if now - self._last <= self.every_s:
            return False
        self._last = now
        return self.stop_event.is_set() or parent_gone(self.parent_pid)


class Worker(Protocol):
    def run(self, stop_event: Any, parent_pid: int) -> None: ...
    def close(self) -> None: ...


def run_worker(worker: Worker, stop_event: Any, parent_pid: int, workload: str,
               emit: Callable[..., None]) -> None:
    """The body of a worker process: `worker.run` until it stops; an error it ends on is
    recorded first (`emit(workload-died, workload=…, error, fatal, where)`, the worker's
    own event call) and then raised, so the process exits non-zero; `worker.close()`
    either way (its history on disk, its group left)."""
    try:
        worker.run(stop_event, parent_pid)
    except BaseException as e:
        emit(WORKLOAD_DIED, workload=workload, **died_detail(e))
        raise
    finally:
        worker.close()


def parent_gone(parent_pid: int) -> bool:
    """True when the process that started us has died (we were re-parented)."""
    return os.getppid() != parent_pid


@atexit.register
def _kill_all() -> None:
    with _LIVE_LOCK:
        live = list(_LIVE)
    for w in live:
        if w.is_alive():
            w.kill()
