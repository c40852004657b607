"""RunContext: what every part of a live run shares, handed to workloads and faults.

Workloads take it instead of (bootstrap, run_dir, run_id, events) in every
constructor; faults get their `FaultContext` from it (`run.faults`), which adds
the fault-only state (faults active now, the seeded rng, the cluster facts
faults act on). `Teardown` is the run's finalizer stack: whatever started is
stopped, newest first, and every finalizer runs even when one fails.
"""
from __future__ import annotations

import logging
import os
import random
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from harness.history import EventLog

if TYPE_CHECKING:
    from faults.base import FaultContext
    from harness.scenario import Scenario

log = logging.getLogger(__name__)


@dataclass
class RunContext:
    run_id: str
    run_dir: Path
    events: EventLog | None
    cluster: Any = None                      # clusters.api.Cluster once it is up
    scenario: "Scenario | None" = None
    seed: int = 0
    faults: "FaultContext | None" = None     # set once the cluster is up (attach_faults)
    fixed_bootstrap: str | None = None       # clients' address when there is no cluster object

    @property
    def bootstrap(self) -> str:
        if self.fixed_bootstrap is not None:
            return self.fixed_bootstrap
        if self.cluster is None:
            raise RuntimeError("the run has no cluster yet")
        return self.cluster.bootstrap_servers()

    @property
    def dir(self) -> str:
        return str(self.run_dir)

    def rng(self, purpose: str) -> random.Random:
        """A random stream of its own per purpose: the same seed, the same choices,
        whatever else drew numbers before."""
        return random.Random(f"{self.seed}-{purpose}")

    def attach_faults(self) -> "FaultContext":
        from faults.context import context_for
        self.faults = context_for(self.cluster, self.events, rng=self.rng("faults"))
        return self.faults


@contextmanager
def stderr_to(path: Path) -> Iterator[None]:
    """fd 2 into a file for the duration: a JVM started meanwhile (Spark's driver)
    keeps writing its log there instead of over the live progress display."""
    path.parent.mkdir(parents=True, exist_ok=True)
    sys.stderr.flush()
    saved = os.dup(2)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    try:
        os.dup2(fd, 2)
        yield
    finally:
        sys.stderr.flush()
        os.dup2(saved, 2)
        os.close(saved)
        os.close(fd)


@dataclass
class Finalizer:
    name: str
    fn: Callable[[], Any]
    done: bool = False


@dataclass
class Teardown:
    """Finalizers in the order things started; `close()` runs the rest newest first.

    A phase may run its own finalizer early (`run("drain")`), so the normal path
    and the interrupted path share one list and nothing is stopped twice.
    """
    finalizers: list[Finalizer] = field(default_factory=list)
    errors: dict[str, str] = field(default_factory=dict)

    def push(self, name: str, fn: Callable[[], Any]) -> None:
        self.finalizers.append(Finalizer(name, fn))

    def run(self, name: str) -> Any:
        """Run one finalizer now (raises what it raises). Once it has completed, close()
        skips it; interrupted half-way (a Ctrl-C inside heal-all), close() runs it again:
        every finalizer is idempotent."""
        for f in reversed(self.finalizers):
            if f.name == name and not f.done:
                result = f.fn()
                f.done = True
                return result
        return None

    def pending(self) -> list[str]:
        return [f.name for f in reversed(self.finalizers) if not f.done]

    def close(self, on_each: Callable[[str], Any] | None = None) -> dict[str, str]:
        for f in reversed(self.finalizers):
            if f.done:
                continue
            f.done = True
            if on_each is not None:
                on_each(f.name)
            try:
                f.fn()
            except BaseException as e:  # noqa: BLE001 - every other finalizer must still run
                self.errors[f.name] = f"{type(e).__name__}: {e}"
                log.warning("teardown %s failed: %s", f.name, e)
        return self.errors
