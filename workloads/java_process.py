"""The parent-side handle of one run of one of our Java programs (java_build.JavaProgram:
the transactional producer, the share-group member): a one-off container of a Kafka
image on the cluster's network (java_clients._run_tool: labelled with the run id,
always removed), followed in a thread of ours. Every stdout line goes to `feed(line)`
in that thread; the program's log (its DEBUG loggers) to
`workloads/java-<name>/stderr.log`.

stop: SIGTERM (the program ends its work cleanly: commits, closes); kill: the
container SIGKILLed at once (nothing flushed, the broker sees the connection drop).
"""
from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from workloads import java_build
from workloads.java_build import JavaProgram
from workloads.java_clients import _run_tool, java_run_of

if TYPE_CHECKING:
    from core.context import RunContext


class JavaProcess:
    """`conf`: the client settings file; `ok_exits`: the exit codes that are not a
    failure of the tool itself (the program's own fatal codes are its caller's to read)."""

    def __init__(self, program: JavaProgram, run: "RunContext", name: str, args: list[str],
                 conf: dict[str, Any], feed: Callable[[str], None], *,
                 clients_version: str | None = None, timeout_s: float = 3600.0,
                 ok_exits: tuple[int, ...] = (0,)):
        self.program, self.run, self.name = program, run, name
        self.args, self.conf, self.feed = args, conf, feed
        self.clients_version, self.timeout_s, self.ok_exits = clients_version, timeout_s, ok_exits
        self.info: dict[str, Any] | None = None
        self.error: str | None = None
        self._stop, self._kill = threading.Event(), threading.Event()
        self._container: Any = None
        self._thread = threading.Thread(target=self._body, name=f"java-{name}", daemon=True)

    @property
    def out_dir(self) -> Path:
        return Path(self.run.dir) / "workloads" / f"java-{self.name}"

    def start(self) -> "JavaProcess":
        self._thread.start()
        return self

    def _body(self) -> None:
        try:
            jrun = java_run_of(self.run, self.clients_version)
            libs = self.libs(jrun.image)
            ready = java_build.prepared(self.program, jrun.image, self.run.run_id, libs)
            self.out_dir.mkdir(parents=True, exist_ok=True)
            java_build.write_log_config(self.program, self.out_dir)
            # ours replace the tools' default heap; a secured cluster's -D options stay
            extra = " ".join(o for o in jrun.java_opts.split() if not o.startswith("-Xmx"))
            mounts = [(str(ready), self.program.class_dir)]
            if libs is not None and self.program.libs_dir:
                mounts.append((str(libs), self.program.libs_dir))
            jrun = replace(jrun, java_opts=java_build.run_opts(self.program, ready, extra),
                           volumes=(*jrun.volumes, *mounts), tmpfs=self.tmpfs)
            self.info = _run_tool(
                jrun, self.name, self.program.main, self.args, self.conf, "--config", self.out_dir,
                self.feed, self.timeout_s, self._stop.is_set, classpath=self.program.classpath,
                ok_exits=self.ok_exits, should_kill=self._kill.is_set, on_container=self._started)
        except Exception as e:  # noqa: BLE001 - the caller reads it as the program's death
            self.error = f"{type(e).__name__}: {e}"[:800]
            self.failed(self.error)
        finally:
            self.ended()

    tmpfs: tuple[tuple[str, str], ...] = ()

    def libs(self, image: str) -> Path | None:
        """The jars the program needs beside the image's (java_build.JavaProgram.libs_dir),
        for a subclass to name; None: none."""
        return None

    def failed(self, error: str) -> None:
        """It could not run (in its thread): for a subclass to record."""

    def ended(self) -> None:
        """Its container is gone (in its thread): for a subclass to close what it wrote."""

    def _started(self, container: Any) -> None:
        self._container = container
        if self._kill.is_set():
            self.kill(0)

    def is_alive(self) -> bool:
        return self._thread.is_alive()

    @property
    def exitcode(self) -> int | None:
        """None while it runs; 1 when it could not run; else the container's exit code
        (137 after kill())."""
        if self._thread.is_alive() or not self._thread.ident:
            return None
        if self.error is not None:
            return 1
        return (self.info or {}).get("exit_code")

    def wait(self, timeout: float | None = None) -> bool:
        self._thread.join(timeout)
        return not self._thread.is_alive()

    def stop(self, timeout: float | None) -> bool:
        """SIGTERM. True when it has ended; timeout 0: no wait (stop several, then wait
        for each)."""
        self._stop.set()
        return self.wait(timeout) if timeout != 0 else not self._thread.is_alive()

    def kill(self, timeout: float = 10.0) -> bool:
        """The container SIGKILLed now. True when it has ended."""
        self._kill.set()
        container = self._container
        if container is not None:
            try:
                container.kill(signal="SIGKILL")
            except Exception:  # noqa: BLE001 - it had ended, or _follow's kill came first
                pass
        return self.wait(timeout) if timeout else not self._thread.is_alive()
