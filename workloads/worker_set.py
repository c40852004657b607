"""A group's worker set: the processes of a pipeline's instances or of a share group's
members, each slot's live instance, and the group's churn.

A slot's first instance has the slot's name; a restarted one is `<slot>.<n>`. The churn
(workloads/churn.py) bounces one slot at a time; the run's end asks every live worker to
stop at once and then waits for each (a Java worker's stop takes seconds). What a family
writes when an instance starts, closes or ends is its own: the hooks below.
"""
from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Protocol

from workloads.churn import Churn
from workloads.spec import ChurnSpec

CHURN_JOIN_S = 60.0


class Worker(Protocol):
    """A worker process as a worker set sees it (workloads/process.py's WorkerProcess,
    or a Java client's container handle)."""

    @property
    def exitcode(self) -> int | None: ...

    @property
    def died(self) -> bool: ...

    def is_alive(self) -> bool: ...

    def request_stop(self) -> None: ...

    def stop(self, timeout: float = 30.0) -> object: ...

    def kill(self) -> object: ...


class WorkerSet:
    """The hooks: `start_instance`, `close`, `kill`, `restarted`, `closing`, `ended`;
    `before_stop` where a family waits for something before its workers stop."""

    def __init__(self) -> None:
        self.workers: dict[str, Worker] = {}              # instance -> its process
        self.current: dict[str, str] = {}                 # slot -> its live instance
        self.restarts: dict[str, int] = {}
        self.stopping = threading.Event()
        self.churn: Churn | None = None

    def start_instance(self, slot: str, instance: str) -> None:
        raise NotImplementedError

    def close(self, instance: str) -> None:
        """A clean close by the churn."""
        raise NotImplementedError

    def kill(self, instance: str) -> None:
        """A hard kill by the churn."""
        raise NotImplementedError

    def restarted(self, instance: str, previous: str, slot: str) -> None:
        """`instance` has replaced `previous` in `slot`."""

    def before_stop(self, graceful: bool) -> None:
        """After the churn has ended, before any worker is asked to stop."""

    def closing(self, instance: str, graceful: bool) -> None:
        """The run's end is about to ask this live instance to stop."""

    def ended(self, instance: str, worker: Worker) -> None:
        """The run's end has stopped this instance (or found it ended)."""

    def start_churn(self, spec: ChurnSpec, slots: list[str], name: str,
                    on_error: Callable[[str, str], None],
                    ready: Callable[[], bool] = lambda: True) -> None:
        self.churn = Churn(
            spec, slots, name=name,
            bounce=lambda slot, clean, down_s: self.bounce(slot, clean=clean, down_s=down_s),
            on_error=on_error, stopping=self.stopping, ready=ready).start()

    def died(self) -> list[str]:
        return [i for i, w in self.workers.items() if w.died]

    def bounce(self, slot: str, *, clean: bool, down_s: float) -> None:
        """The churn's turn: close or kill the slot's instance, stay away `down_s`, then
        start the slot's next instance (none when the group stops meanwhile)."""
        instance = self.current[slot]
        self.close(instance) if clean else self.kill(instance)
        if self.stopping.wait(down_s):
            return
        self.restarts[slot] = self.restarts.get(slot, 0) + 1
        new = f"{slot}.{self.restarts[slot]}"
        self.start_instance(slot, new)
        self.restarted(new, instance, slot)

    def stop(self, graceful: bool) -> None:
        """The churn ended, then every live worker asked to stop at once, then each
        waited for (one that does not end in time is killed by its own stop)."""
        self.stopping.set()
        if self.churn is not None:
            self.churn.join(CHURN_JOIN_S)
        self.before_stop(graceful)
        live = [(i, w) for i, w in self.workers.items() if w.exitcode is None and w.is_alive()]
        for instance, w in live:
            self.closing(instance, graceful)
            w.request_stop()
        for instance, w in self.workers.items():
            if w.exitcode is None:
                w.stop(30.0 if graceful else 5.0)
            self.ended(instance, w)
