"""The run context: what every part of a live run shares, and its one finalizer stack.

Workloads, faults, the observer and the verifier receive a `RunContext` instead of
(bootstrap, run_dir, run_id, events) in every constructor. Resources (the cluster,
the observer, the workloads, the faults, the Spark session) are entered on its
`finalizers`: whatever started is stopped, newest first, and every finalizer runs
even when one fails.

The bottom of the house: nothing here imports the project's other packages; a
cluster is anything that can say where its clients connect (`ClusterAccess`).
"""
from __future__ import annotations

import logging
import random
import time
from collections.abc import Callable
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

from core.history import EventLog

log = logging.getLogger(__name__)


@runtime_checkable
class ClusterAccess(Protocol):
    """What the run context needs of a cluster (clusters.api.Cluster is one)."""

    def bootstrap_servers(self) -> str: ...


@dataclass
class RunOptions:
    """How a run is made, beside its scenario (the command line's flags)."""
    runs_dir: Path = Path("runs")
    verify: bool = True
    spark_master: str | None = None
    progress: str = "auto"             # auto (rich on a TTY, plain lines otherwise), plain, none
    run_id: str | None = None
    spark: Any = None                  # a SparkSession to verify in (a suite shares one)


@dataclass
class Finalizer:
    name: str
    fn: Callable[[], Any]
    done: bool = False


@dataclass
class Finalizers:
    """Finalizers in the order things started; `close()` runs the rest newest first,
    every one even when one fails (its error is kept by name).

    A phase may run its own finalizer early (`run("heal-all")`), so the normal path
    and an interrupted one share one list and nothing is stopped twice."""
    finalizers: list[Finalizer] = field(default_factory=list)
    errors: dict[str, str] = field(default_factory=dict)

    def push(self, name: str, fn: Callable[[], Any]) -> None:
        self.finalizers.append(Finalizer(name, fn))

    def enter(self, name: str, resource: AbstractContextManager) -> Any:
        """Enter a resource; its exit is the finalizer `name` (the stack's ExitStack)."""
        value = resource.__enter__()
        self.push(name, lambda: resource.__exit__(None, None, None))
        return value

    def run(self, name: str) -> Any:
        """Run one finalizer now (raises what it raises). Once it has completed, close()
        skips it; interrupted half-way (a Ctrl-C inside heal-all), close() runs it
        again: every finalizer is idempotent."""
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


@dataclass
class RunContext:
    run_id: str
    run_dir: Path
    events: EventLog | None
    cluster: ClusterAccess | None = None     # set once it is up
    options: RunOptions = field(default_factory=RunOptions)
    seed: int = 0
    fixed_bootstrap: str | None = None       # clients' address when there is no cluster object
    # What every client needs beside the bootstrap address (librdkafka names: security.protocol,
    # sasl.*, ssl.*), set with the cluster; it may hold a password: never written or printed.
    client_config: dict[str, str] = field(default_factory=dict, repr=False)
    finalizers: Finalizers = field(default_factory=Finalizers)
    # When the run ends the load before its duration (time.monotonic(); the scenario's
    # workload.end_after_faults_s, set by the workloads-stop phase); None: it runs out.
    load_cut_at: float | None = None

    def load_left(self, started_at: float, duration_s: float) -> float:
        """Seconds until a load begun at `started_at` (time.monotonic()) ends: its
        duration, or sooner when the run cuts it."""
        end = started_at + duration_s
        if self.load_cut_at is not None:
            end = min(end, self.load_cut_at)
        return max(0.0, end - time.monotonic())

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
