"""A producer restarted while it runs (`ProducerSpec.churn`, or `on_fatal: restart`
after a fatal client error): its incarnations in turn.

Every `every_s` the running producer process is stopped cleanly (it waits for its
outstanding outcomes) or killed (SIGKILL: what was in flight becomes indeterminate,
an open transaction stays open), and after `down_s` the next incarnation starts. It
is a new producer for the history (`p0`, then `p0.1`, `p0.2` …: the history spec
gives a restarted producer a new name, so record_ids stay unique) with the same
transactional.id: its `init_transactions` fences the old one and aborts the
transaction it left open. Each incarnation gets what is left of the duration or of
the record count, so the producer as a whole ends when an unchurned one would.

After a fatal client error with `on_fatal: restart`, the process exits with
FATAL_RESTART_EXIT (its `client-fatal` event says why) and the next incarnation
starts at once, at most MAX_FATAL_RESTARTS times.

`ChurningProducer` offers the runner the parent-side calls of `ProducerProcess`.
"""
from __future__ import annotations

import math
import threading
import time
from typing import TYPE_CHECKING, Any

from workloads.connection import connected
from workloads.java_txn import JavaTxnProducer
from workloads.process import FATAL_RESTART_EXIT
from workloads.producer import ProducerProcess, ReconcileResult
from workloads.spec import ProducerSpec

if TYPE_CHECKING:
    from core.context import RunContext


MAX_FATAL_RESTARTS = 20
POLL_S = 0.2


# Past its duration, a producer has its delivery timeout and this long to report its outcomes.
DELIVERY_SLACK_S = 30.0


def end_load(producers, run: "RunContext", started_at: float, duration_s: float) -> None:
    """The graceful end of producers begun at `started_at`: each runs out its duration
    and reports its outcomes, or is asked to stop; when the run cuts the load
    (RunContext.load_cut_at), each sends until the cut. The caller then stops, without
    a time limit, each one still running (the cut ones: they flush what is in flight)."""
    for p in producers:
        left = run.load_left(started_at, duration_s)
        if run.load_cut_at is not None:
            p.wait(left)
        elif not p.wait(left + p.spec.delivery_timeout_ms / 1000 + DELIVERY_SLACK_S):
            p.stop()


def start_producer(spec: ProducerSpec, run: "RunContext", clients_version: str | None = None):
    """The producer the spec asks for, started: supervised when it may be restarted.
    `clients_version`: the Java client's jars (workload.clients_version)."""
    spec = connected(spec, run)
    if spec.churn is not None or spec.on_fatal == "restart":
        return ChurningProducer(spec, run, clients_version).start()
    return incarnation(spec, run, clients_version).start()


def incarnation(spec: ProducerSpec, run: "RunContext",
                clients_version: str | None = None) -> "ProducerProcess | JavaTxnProducer":
    if spec.client == "java":
        return JavaTxnProducer(spec, run, clients_version)
    return ProducerProcess(spec, run)


class ChurningProducer:
    def __init__(self, spec: ProducerSpec, run: "RunContext", clients_version: str | None = None):
        self.spec, self._run, self.clients_version = spec, run, clients_version
        self.incarnations: list = []           # ProducerProcess or JavaTxnProducer
        self.fatal_restarts = 0
        self._stopping = threading.Event()
        self._lock = threading.Lock()          # a restart and the runner's wait/stop, one at a time
        self._restarting = False
        self._ends_at: float | None = None
        self._thread = threading.Thread(target=self._churn_loop, name=f"churn-{spec.name}", daemon=True)

    @property
    def txn_id(self) -> str | None:
        """The transactional.id every incarnation shares (the first one's)."""
        return self.incarnations[0].txn_id if self.incarnations else None

    @property
    def current(self) -> ProducerProcess:
        return self.incarnations[-1]

    def start(self) -> "ChurningProducer":
        if self.spec.duration_s is not None:
            self._ends_at = time.monotonic() + self.spec.duration_s
        self._start_incarnation()
        self._thread.start()
        return self

    def _start_incarnation(self) -> bool:
        """The next incarnation with what is left of the workload; False if nothing is."""
        n = len(self.incarnations)
        update: dict[str, Any] = {"churn": None, "name": self.spec.name if n == 0 else f"{self.spec.name}.{n}"}
        if self._ends_at is not None:
            update["duration_s"] = self._ends_at - time.monotonic()
            if update["duration_s"] <= 0.5:
                return False
        if self.spec.records is not None:
            update["records"] = self.spec.records - sum(p.result.announced for p in self.incarnations)
            if update["records"] <= 0:
                return False
        if self.spec.transactions is not None and n > 0:       # the first one's id: fencing
            update["transactions"] = self.spec.transactions.model_copy(
                update={"transactional_id": self.incarnations[0].txn_id})
        self.incarnations.append(incarnation(self.spec.model_copy(update=update), self._run,
                                             self.clients_version).start())
        return True

    def _churn_loop(self) -> None:
        """Every churn.every_s, and at once after a fatal client error (on_fatal: restart),
        the next incarnation; until the producer stops or has done its work."""
        churn = self.spec.churn
        next_churn = time.monotonic() + churn.first_s if churn is not None else math.inf
        while not self._stopping.wait(POLL_S):
            with self._lock:
                fatal = self._fatal_ended()
                if not fatal and time.monotonic() < next_churn:
                    continue
                down_s = 0.0 if fatal else churn.down_s
                if self._stopping.is_set() or self._too_late(down_s) or not (
                        fatal or self.current.is_alive()):
                    return                     # stopping, or the producer has done its work
                self._restarting = True
            try:
                self._restart(not fatal and churn.how == "clean", down_s, fatal)
            except Exception as e:  # noqa: BLE001 - one failed restart must not end the churn
                self._event("producer-churn-error", error=f"{type(e).__name__}: {e}")
            finally:
                self._restarting = False
            if not fatal:
                next_churn = time.monotonic() + churn.every_s

    def _fatal_ended(self) -> bool:
        """The current incarnation ended on a fatal client error and asks for the next."""
        p = self.current
        return (self.spec.on_fatal == "restart" and self.fatal_restarts < MAX_FATAL_RESTARTS
                and not p.is_alive() and p.exitcode == FATAL_RESTART_EXIT)

    def _too_late(self, down_s: float) -> bool:
        """No restart that would leave no time for the next incarnation: a killed
        transactional producer's open transaction is aborted only by its successor."""
        return self._ends_at is not None and self._ends_at - time.monotonic() < down_s + 2.0

    def _restart(self, clean: bool, down_s: float, fatal: bool = False) -> None:
        old = self.current
        if fatal:
            self.fatal_restarts += 1
            old.wait(10)                       # records its end (and reconciles it)
        else:
            old.stop() if clean else old.kill()
        if self._stopping.wait(down_s) or not self._start_incarnation():
            return
        self._event("producer-restart", incarnation=len(self.incarnations) - 1,
                    previous=old.spec.name, producer=self.current.spec.name,
                    after="fatal client error" if fatal else "churn")

    def wait(self, timeout: float | None = None) -> bool:
        """Wait for the producer to finish its records/duration; True if it ended.
        Polls under the lock, never while a restart is under way: two threads reaping
        one child race (the loser reads the dead process as alive)."""
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            with self._lock:
                if not self._restarting and not self.current.is_alive() and not (
                        self._thread.is_alive() and self._fatal_ended()):
                    self._stopping.set()       # ended by itself: no more restarts
                    self.current.wait(10)      # records its end (and reconciles it)
                    return True
            if deadline is not None and time.monotonic() >= deadline:
                return False
            time.sleep(0.2)

    def stop(self, timeout: float | None = None) -> ReconcileResult:
        self._stopping.set()
        self._thread.join()                    # a restart under way ends first
        self.current.stop(timeout)
        return self.result

    @property
    def result(self) -> ReconcileResult | None:
        """Every incarnation's outcome summed, once the last has ended."""
        if self._restarting or self.current.result is None:
            return None
        rs = [p.result for p in self.incarnations]
        return ReconcileResult(*(sum(getattr(r, f) for r in rs) for f in ("announced", "recorded",
                                                                          "indeterminate")))

    @property
    def exitcode(self) -> int | None:
        """The current incarnation's; None while one is being replaced (a killed one's -9
        is the churn's doing, not a crash)."""
        with self._lock:
            if self._restarting or (self._thread.is_alive() and self._fatal_ended()):
                return None
            return self.current.exitcode

    def _event(self, name: str, **detail: Any) -> None:
        if self._run.events is not None:
            self._run.events.emit("client", name, self.spec.name, **detail)
