"""The warm Spark: one local Spark Connect server that every verify on this machine shares.

A verify used to start its own driver JVM and pay for it every time: start-up, class
loading, and the JIT compiling Spark's planner and a verify's generated classes.
The server keeps one JVM warm. The first verify that needs it starts it; later ones
(other runs, other processes) reuse it, each in a Spark session of its own.

The server
- listens on 127.0.0.1 only, and asks for a token (a new one per server, kept with
  its state, readable by this user only);
- is run by a supervisor (`python -m spark_reports.connect_server serve`), a process
  of its own that stops it after HARNESS_SPARK_IDLE_TIMEOUT (default 30 min) without
  a verify, on `harness spark stop`, and cleans up when the JVM dies. The JVM carries
  its supervisor's pid (-Dharness.connect.owner), so `harness gc` ends a server whose
  supervisor is gone (reap_orphans);
- keeps its state in the harness state directory (state_dir(): HARNESS_STATE, default
  $XDG_STATE_HOME/kafka-harness or ~/.local/state/kafka-harness), spark-connect/:
  state.json (pids, port, token), server.log, start.lock (one start at a time),
  leases/ (one file per verify in progress: the supervisor never stops a server a
  verify uses), sessions/ (one lock file per session slot: SessionSlot) and
  last_used (its mtime: when the last verify ended).
"""
from __future__ import annotations

import contextlib
import fcntl
import json
import os
import secrets
import signal
import socket
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from dataclasses import asdict, dataclass
from pathlib import Path

from spark_reports import driver_jdk

SERVER_CLASS = "org.apache.spark.sql.connect.service.SparkConnectServer"
OWNER_PROPERTY = "harness.connect.owner"
DEFAULT_IDLE_TIMEOUT_S = 30 * 60
START_TIMEOUT_S = float(os.environ.get("HARNESS_SPARK_START_TIMEOUT", "180"))
POLL_S = 2.0


class ServerUnavailable(RuntimeError):
    """The local server could not be started or reached (the message says why)."""


def state_dir() -> Path:
    """Where the harness keeps the state of what it leaves running between commands."""
    base = os.environ.get("HARNESS_STATE")
    if not base:
        xdg = os.environ.get("XDG_STATE_HOME") or str(Path.home() / ".local" / "state")
        base = str(Path(xdg) / "kafka-harness")
    d = Path(base) / "spark-connect"
    (d / "leases").mkdir(parents=True, exist_ok=True, mode=0o700)
    return d


def idle_timeout_s() -> float:
    """HARNESS_SPARK_IDLE_TIMEOUT: seconds, or with a unit (90s, 30m, 2h)."""
    text = os.environ.get("HARNESS_SPARK_IDLE_TIMEOUT", "").strip()
    if not text:
        return DEFAULT_IDLE_TIMEOUT_S
    units = {"s": 1, "m": 60, "h": 3600}
    try:
        if text[-1] in units:
            return float(text[:-1]) * units[text[-1]]
        return float(text)
    except ValueError:
        raise ServerUnavailable(f"HARNESS_SPARK_IDLE_TIMEOUT={text!r} is not a duration "
                                "(write seconds, or e.g. 30m)") from None


# -- processes ------------------------------------------------------------------------

def proc_start(pid: int) -> str | None:
    """A process's start time (clock ticks since boot), None when it does not exist:
    with the pid it names one process, never a later one that reuses the pid."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except (OSError, ValueError, IndexError):
        return None
    # a zombie has exited: only its parent has not collected it yet
    return None if fields[0] in ("Z", "X") else fields[19]


def same_process(pid: int | None, start: str | None) -> bool:
    return bool(pid) and start is not None and proc_start(pid) == start


def _cmdline(pid: int) -> list[str]:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().decode(errors="replace").split("\0")
    except OSError:
        return []


def _port_open(port: int) -> bool:
    with socket.socket() as s:
        s.settimeout(0.5)
        return s.connect_ex(("127.0.0.1", port)) == 0


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _kill(pid: int, start: str | None, grace_s: float = 10.0) -> bool:
    """SIGTERM, then SIGKILL after grace_s; whether the process was there."""
    if not same_process(pid, start):
        return False
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + grace_s
    while same_process(pid, start) and time.monotonic() < deadline:
        time.sleep(0.1)
    if same_process(pid, start):
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
    return True


# -- state ----------------------------------------------------------------------------

@dataclass(frozen=True)
class ServerState:
    port: int
    token: str
    jvm_pid: int
    jvm_start: str
    supervisor_pid: int
    supervisor_start: str
    started_at: float
    idle_timeout_s: float
    java: str
    log: str

    @property
    def url(self) -> str:
        # "localhost" with a token: pyspark's client then uses gRPC's local credentials
        # (no TLS), as it does for its own local servers
        return f"sc://localhost:{self.port}/;token={self.token}"

    @property
    def display_url(self) -> str:
        return f"sc://127.0.0.1:{self.port}"

    def alive(self) -> bool:
        return (same_process(self.jvm_pid, self.jvm_start)
                and same_process(self.supervisor_pid, self.supervisor_start))


def _state_file() -> Path:
    return state_dir() / "state.json"


def read_state() -> ServerState | None:
    try:
        return ServerState(**json.loads(_state_file().read_text()))
    except (OSError, ValueError, TypeError):
        return None


def _write_state(state: ServerState) -> None:
    path = _state_file()
    tmp = path.with_name(f"state.{os.getpid()}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as f:
        json.dump(asdict(state), f, indent=1)
    os.replace(tmp, path)


def _clear_state(state: ServerState | None) -> None:
    """Remove the state file if it still describes `state` (a newer server's stays)."""
    current = read_state()
    if current is None or state is None or current.jvm_pid == state.jvm_pid:
        _state_file().unlink(missing_ok=True)


@contextlib.contextmanager
def _start_lock() -> Iterator[None]:
    fd = os.open(state_dir() / "start.lock", os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)


# -- the client's side: start or reuse, lease, stop -------------------------------------

def ensure_server() -> ServerState:
    """The running server, started first when there is none (a stale state file, of a
    server that died or whose supervisor is gone, is cleaned up first)."""
    idle = idle_timeout_s()
    with _start_lock():
        state = read_state()
        if state is not None and state.alive() and _port_open(state.port):
            return state
        if state is not None:
            _end(state)
        return _start(idle)


def _start(idle_s: float) -> ServerState:
    d = state_dir()
    log_path = d / "server.log"
    root = str(Path(__file__).resolve().parents[1])
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(
        p for p in (root, os.environ.get("PYTHONPATH")) if p)}
    with log_path.open("ab") as log:
        # a session of its own: the server outlives this process, and a Ctrl-C in the
        # terminal that started it does not reach it
        proc = subprocess.Popen([sys.executable, "-m", "spark_reports.connect_server", "serve",
                                 "--idle", str(idle_s)], env=env, cwd=d, stdin=subprocess.DEVNULL,
                                stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    deadline = time.monotonic() + START_TIMEOUT_S
    while time.monotonic() < deadline:
        state = read_state()
        if state is not None and state.supervisor_pid == proc.pid and _port_open(state.port):
            return state
        if proc.poll() is not None:
            raise ServerUnavailable(f"the local Spark Connect server did not start (exit "
                                    f"{proc.returncode}): {_log_tail(log_path)} (log: {log_path})")
        time.sleep(0.2)
    _kill(proc.pid, proc_start(proc.pid))
    proc.wait()
    raise ServerUnavailable(f"the local Spark Connect server was not ready after "
                            f"{START_TIMEOUT_S:.0f} s (HARNESS_SPARK_START_TIMEOUT; log: {log_path})")


def _log_tail(path: Path, lines: int = 3) -> str:
    try:
        text = path.read_text(errors="replace").strip().splitlines()
    except OSError:
        return "no log"
    wanted = [t for t in text if "ERROR" in t or "Exception" in t or "error" in t] or text
    return " | ".join(t.strip() for t in wanted[-lines:])


@contextlib.contextmanager
def lease(about: str) -> Iterator[None]:
    """Mark the server in use for the body (the supervisor does not stop a server with a
    live lease); its end counts as the server's last use."""
    d = state_dir()
    name = f"{os.getpid()}-{proc_start(os.getpid())}-{secrets.token_hex(4)}"
    path = d / "leases" / name
    path.write_text(about)
    try:
        yield
    finally:
        path.unlink(missing_ok=True)
        (d / "last_used").touch()


class SessionSlot:
    """One Spark Connect session id of the server that no other verify uses meanwhile.

    A verify reuses the session the verify before it left (it does not release it):
    Spark caches the classes it generates per session (their class loader is the
    session's), so in a new session each verify compiled its ~250 classes again and
    the JIT compiled them again. Measured on a 100 000-record history, one session
    reused: 11-14 CPU-s of the server's JVM per verify against 17-24 in new sessions
    (benchmarks/RESULTS.md, issue 37). A verify has one slot to itself (a lock file
    in sessions/), so concurrent verifies are in different sessions. The id is new
    per server (from its token) and per generation: a session released after an
    error, or closed by the server, is never asked for again (the server refuses a
    closed session's id)."""

    def __init__(self, fd: int, number: int, token: str):
        self.fd, self.number, self.token = fd, number, token

    def _generation(self) -> int:
        text = os.pread(self.fd, 32, 0).decode(errors="replace").strip()
        return int(text) if text.isdigit() else 0

    @property
    def session_id(self) -> str:
        return str(uuid.uuid5(uuid.NAMESPACE_URL,
                              f"harness:{self.token}:{self.number}:{self._generation()}"))

    def retire(self) -> None:
        """This id's session is released or closed: the next verify in the slot asks
        for a new one."""
        data = f"{self._generation() + 1}\n".encode()
        os.ftruncate(self.fd, 0)
        os.pwrite(self.fd, data, 0)


@contextlib.contextmanager
def session_slot(state: ServerState) -> Iterator[SessionSlot]:
    """The first slot no other verify holds, held for the body."""
    d = state_dir() / "sessions"
    d.mkdir(exist_ok=True, mode=0o700)
    number = 0
    while True:
        fd = os.open(d / f"{number}.lock", os.O_RDWR | os.O_CREAT, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            break
        except BlockingIOError:
            os.close(fd)
            number += 1
    try:
        yield SessionSlot(fd, number, state.token)
    finally:
        os.close(fd)


def live_leases() -> list[tuple[int, str]]:
    """(pid, what it verifies) of each verify using the server; dead ones removed."""
    out = []
    for f in sorted((state_dir() / "leases").iterdir()):
        pid, start = _lease_owner(f.name)
        if same_process(pid, start):
            out.append((pid, f.read_text(errors="replace")))
        else:
            f.unlink(missing_ok=True)
    return out


def _lease_owner(name: str) -> tuple[int | None, str | None]:
    parts = name.split("-")
    try:
        return int(parts[0]), parts[1]
    except (IndexError, ValueError):
        return None, None


def _end(state: ServerState) -> None:
    """Stop a server (its supervisor first, which stops the JVM) and forget it."""
    _kill(state.supervisor_pid, state.supervisor_start)
    _kill(state.jvm_pid, state.jvm_start)
    _clear_state(state)


def stop_server() -> ServerState | None:
    """`harness spark stop`: the server that was running, None when there was none."""
    with _start_lock():
        state = read_state()
        if state is None:
            return None
        _end(state)
        return state


def status() -> dict | None:
    """`harness spark status`: the server, its memory and what it verifies now."""
    state = read_state()
    if state is None:
        return None
    last = max(state.started_at, _mtime(state_dir() / "last_used"))
    return {"url": state.display_url, "alive": state.alive(), "jvm_pid": state.jvm_pid,
            "supervisor_pid": state.supervisor_pid, "java": state.java,
            "up_s": round(time.time() - state.started_at), "idle_s": round(time.time() - last),
            "idle_timeout_s": state.idle_timeout_s, "log": state.log,
            "memory": _memory(state.jvm_pid), "verifying": live_leases()}


def _mtime(path: Path) -> float:
    try:
        return path.stat().st_mtime
    except OSError:
        return 0.0


def _memory(pid: int) -> dict:
    """The JVM's resident memory now and at its peak (MiB), from /proc."""
    out = {}
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            key, _, value = line.partition(":")
            if key in ("VmRSS", "VmHWM"):
                out["rss_mib" if key == "VmRSS" else "peak_rss_mib"] = int(value.split()[0]) // 1024
    except (OSError, ValueError):
        pass
    return out


def reap_orphans(dry_run: bool = False) -> int:
    """`harness gc`: end the Connect server JVMs whose supervisor is gone, and forget a
    state file whose server is gone; how many JVMs."""
    reaped = 0
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        owner = _owner_of(_cmdline(int(entry.name)))
        if owner is None or same_process(*owner):
            continue
        reaped += 1
        if not dry_run:
            _kill(int(entry.name), proc_start(int(entry.name)))
    state = read_state()
    if state is not None and not state.alive() and not dry_run:
        with _start_lock():
            _end(state)
    if not dry_run:
        live_leases()
    return reaped


def _owner_of(cmdline: list[str]) -> tuple[int, str] | None:
    """(pid, start) of the supervisor a server JVM's command line names."""
    if SERVER_CLASS not in cmdline:
        return None
    for arg in cmdline:
        for word in arg.split():
            if word.startswith(f"-D{OWNER_PROPERTY}="):
                pid, _, start = word.split("=", 1)[1].partition(":")
                if pid.isdigit():
                    return int(pid), start
    return None


# -- the supervisor -------------------------------------------------------------------

# The server's static configuration: what spark_reports.session sets on a local classic
# session that a Connect session cannot set for itself (each session sets its runtime
# options: time zone, shuffle partitions, Parquet timestamps).
SERVER_CONF = {
    "spark.ui.enabled": "false",
    "spark.ui.showConsoleProgress": "false",
    "spark.driver.host": "127.0.0.1",
    "spark.driver.bindAddress": "127.0.0.1",
    "spark.connect.grpc.binding.address": "127.0.0.1",
    "spark.log.level": "WARN",
    # see spark_reports.session: ~115 generated classes per verify, kept between verifies
    "spark.sql.codegen.cache.maxEntries": "1000",
    "spark.shuffle.compress": "false",
    "spark.shuffle.spill.compress": "false",
    "spark.sql.session.timeZone": "UTC",
    # Each session's plan cache (on: spark_reports.session) keeps this many analysed
    # plans: a verify analyses about 60, its kinds four at a time, each built on one
    # analysed a moment before (Spark's default keeps 16).
    "spark.connect.session.planCache.maxSize": "64",
}


def server_command(port: int, owner: str, master: str = "local[*]") -> list[str]:
    """spark-submit starting pyspark's own SparkConnectServer, as a user would."""
    # pyspark: the supervisor's import, never a verify's (it only connects)
    import pyspark

    from spark_reports.jvm_options import DEFAULT_DRIVER_MEMORY, server_java_options
    home = os.path.dirname(os.path.realpath(pyspark.__file__))
    conf = {**SERVER_CONF, "spark.connect.grpc.binding.port": str(port),
            "spark.driver.extraJavaOptions": f"{server_java_options()} -D{OWNER_PROPERTY}={owner}"}
    cmd = [os.path.join(home, "bin", "spark-submit"), "--master", master,
           "--driver-memory", DEFAULT_DRIVER_MEMORY, "--name", "harness-connect-server",
           "--class", SERVER_CLASS]
    for key, value in conf.items():
        cmd += ["--conf", f"{key}={value}"]
    return [*cmd, "spark-internal"]


class _Supervisor:
    """Runs the JVM; stops it when idle, when told (SIGTERM), and forgets it when it dies."""

    def __init__(self, idle_s: float):
        self.idle_s, self.stopping = idle_s, False
        for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
            signal.signal(sig, self._stop)

    def _stop(self, *_):
        self.stopping = True

    def run(self) -> int:
        me = f"{os.getpid()}:{proc_start(os.getpid())}"
        port = int(os.environ.get("HARNESS_SPARK_CONNECT_PORT") or 0) or _free_port()
        if _port_open(port):
            print(f"port {port} on 127.0.0.1 is in use (HARNESS_SPARK_CONNECT_PORT)", flush=True)
            return 3
        token = secrets.token_hex(16)
        jdk = driver_jdk.prepare_env()
        env = {**os.environ, "SPARK_CONNECT_AUTHENTICATE_TOKEN": token, "SPARK_LOCAL_IP": "127.0.0.1",
               "PYSPARK_PYTHON": sys.executable}
        for var in ("SPARK_REMOTE", "SPARK_CONNECT_MODE_ENABLED", "SPARK_HOME"):
            env.pop(var, None)
        jvm = subprocess.Popen(server_command(port, me), env=env, stdin=subprocess.DEVNULL)
        state = None
        try:
            state = self._await_ready(jvm, port, token, jdk.describe())
            if state is None:
                return 1
            self._watch(jvm)
            return 0
        finally:
            _kill(jvm.pid, proc_start(jvm.pid))
            jvm.wait()
            _clear_state(state)
            print(f"[{time.strftime('%F %T')}] supervisor {os.getpid()}: server stopped", flush=True)

    def _await_ready(self, jvm, port: int, token: str, java: str) -> ServerState | None:
        deadline = time.monotonic() + START_TIMEOUT_S
        while time.monotonic() < deadline and not self.stopping:
            if jvm.poll() is not None:
                return None
            if _port_open(port):
                state = ServerState(port, token, jvm.pid, proc_start(jvm.pid) or "",
                                    os.getpid(), proc_start(os.getpid()) or "", time.time(),
                                    self.idle_s, java, str(state_dir() / "server.log"))
                _write_state(state)
                print(f"[{time.strftime('%F %T')}] supervisor {os.getpid()}: server "
                      f"{state.display_url} ready, JVM pid {jvm.pid}", flush=True)
                return state
            time.sleep(0.2)
        return None

    def _watch(self, jvm) -> None:
        started = time.time()
        while not self.stopping and jvm.poll() is None:
            time.sleep(POLL_S)
            current = read_state()
            if current is None or current.jvm_pid != jvm.pid:
                # nobody can find it any more (its state directory removed, or its state
                # file replaced): it would only hold its memory until the idle timeout
                print(f"[{time.strftime('%F %T')}] not in {_state_file()} any more: stopping",
                      flush=True)
                return
            if live_leases():
                continue
            last = max(started, _mtime(state_dir() / "last_used"))
            if time.time() - last > self.idle_s:
                print(f"[{time.strftime('%F %T')}] idle for {self.idle_s:.0f} s: stopping", flush=True)
                return


def main(argv: list[str] | None = None) -> int:
    import argparse
    p = argparse.ArgumentParser(prog="python -m spark_reports.connect_server")
    sub = p.add_subparsers(dest="command", required=True)
    serve = sub.add_parser("serve", help="run the server in the foreground (the supervisor)")
    serve.add_argument("--idle", type=float, default=DEFAULT_IDLE_TIMEOUT_S)
    args = p.parse_args(argv)
    return _Supervisor(args.idle).run()


if __name__ == "__main__":
    sys.exit(main())
