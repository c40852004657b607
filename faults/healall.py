"""Heal-all: the last thing before teardown, whatever happened.

`heal_all` heals every active fault (newest first), then sweeps every node
for what a crashed harness could have left behind (frozen JVMs, paused
containers, harness iptables rules, disk filler files, read-only log dirs,
toxics), then retries faults whose heal failed the first time (a rule cannot
be removed from a paused container until it is unpaused). It writes one
`phase` event `heal-all` saying what it healed, swept and could not heal.

`heal_all_on_exit(ctx)` wraps a run so heal-all runs on a normal exit, an
exception, a failed assertion, Ctrl-C (KeyboardInterrupt) and SIGTERM.
`leftovers(ctx)` lists what is still in effect (tests assert it is empty).
"""
from __future__ import annotations

import logging
import shlex
import signal
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

from clusters.api import BROKER_ROLES, TOXIPROXY, Node
from faults.base import FaultContext, container_status, sh
from faults.disk import filler_path, free_on_host, host_mount_of, mount_is_readonly, remount
from faults.network import CHAIN, flush_script, rules_on
from faults.pause import unfreeze
from faults.process import CLEAN, start_supervised, stop_node

log = logging.getLogger(__name__)


@dataclass
class HealAllReport:
    reason: str
    healed: list[str] = field(default_factory=list)
    unhealed: dict[str, str] = field(default_factory=dict)
    swept: list[str] = field(default_factory=list)


def _fault_nodes(ctx: FaultContext) -> list[Node]:
    """The nodes a sweep can reach: ours (a Node with its container). An external
    cluster's nodes have none; only the user's own heal commands act on them."""
    return [n for n in ctx.cluster.nodes() if n.role != TOXIPROXY and isinstance(n, Node)]


def sweep_node(node: Node, ctx: FaultContext, host_mount: str | None = None) -> list[str]:
    """Undo every kind of fault on one node, without knowing which were injected."""
    log_dir = ctx.log_dir
    done = []
    unfreeze(node)                                       # docker unpause + SIGCONT
    if host_mount is not None and free_on_host(host_mount):
        # A full disk first, freed on the host tmpfs (it outlives the container). The
        # broker may have hit ENOSPC already, and one whose only log dir failed halts by
        # itself seconds later, possibly after this sweep found it running: restart it,
        # so it is settled either way. (A DiskFull heal knows its markers and waits for
        # the halt instead; only a dead harness leaves a filler to the sweep.)
        stop_node(node, CLEAN, ctx.settle_timeout_s)
    if not node.is_running():
        # Killed by a fault, or a broker that shut itself down (a full disk).
        [started] = start_supervised([node], ctx.cluster, ctx.settle_timeout_s)
        again = f", started again {started.restarts}x" if started.restarts else ""
        done.append(f"{node.name} (started{again})")
    sh(node, flush_script(), check=False)
    if node.role in BROKER_ROLES:
        q = shlex.quote(log_dir)
        sh(node, f"rm -f {shlex.quote(filler_path(log_dir))}; "
                 f"[ -d {q} ] && chmod u+w {q} && "
                 f"find {q} -mindepth 1 -maxdepth 1 -type d -exec chmod u+w {{}} +; true",
           check=False)
    done.append(node.name)
    return done


def sweep(ctx: FaultContext) -> list[str]:
    swept: list[str] = []
    try:
        nodes = _fault_nodes(ctx)
    except Exception as e:  # noqa: BLE001 - a broken cluster object must not stop heal-all
        log.warning("cannot list nodes to sweep: %s", e)
        nodes = []
    for node in nodes:
        # Twice at most: a broker can stop on its own between the sweep's steps (its
        # full log dir failed), and the second sweep then starts it.
        for last in (False, True):
            try:
                mount = host_mount_of(ctx, node)
                if mount is not None and mount_is_readonly(mount):
                    remount(mount, "rw")
                swept += sweep_node(node, ctx, mount)
                break
            except Exception as e:  # noqa: BLE001 - sweep every node we can
                (log.warning if last else log.info)("sweep of %s failed: %s", node.name, e)
    if ctx.toxiproxy is not None:
        try:
            ctx.toxiproxy.reset()
            swept.append("toxiproxy")
        except Exception as e:  # noqa: BLE001
            log.warning("toxiproxy reset failed: %s", e)
    return swept


def heal_all(ctx: FaultContext, reason: str = "teardown") -> HealAllReport:
    report = HealAllReport(reason=reason)
    with ctx._lock:
        pending = list(reversed(list(ctx.active.values())))
    failed = []
    for fault in pending:
        try:
            fault.heal(ctx)
            report.healed.append(fault.fault_id)
        except Exception as e:  # noqa: BLE001 - retried after the sweep
            failed.append(fault)
            report.unhealed[fault.fault_id] = f"{type(e).__name__}: {e}"
    report.swept = sweep(ctx)
    for fault in failed:
        try:
            fault.heal(ctx)
            report.healed.append(fault.fault_id)
            report.unhealed.pop(fault.fault_id, None)
        except Exception as e:  # noqa: BLE001
            report.unhealed[fault.fault_id] = f"{type(e).__name__}: {e}"
    ctx.heal_all_runs += 1
    ctx.emit("phase", "heal-all", None, reason=reason, healed=report.healed,
             unhealed=report.unhealed, swept=report.swept)
    if report.unhealed:
        log.error("heal-all could not heal: %s", report.unhealed)
    return report


@contextmanager
def heal_all_on_exit(ctx: FaultContext) -> Iterator[FaultContext]:
    """Run the body; heal-all afterwards no matter how the body ends.
    SIGTERM is turned into KeyboardInterrupt while inside (main thread only)."""
    previous = None
    in_main = threading.current_thread() is threading.main_thread()
    if in_main:
        def on_term(signum, frame):
            raise KeyboardInterrupt(f"signal {signum}")
        previous = signal.signal(signal.SIGTERM, on_term)
    reason = "completed"
    try:
        yield ctx
    except KeyboardInterrupt:
        reason = "interrupted"
        raise
    except BaseException as e:
        reason = f"error: {type(e).__name__}"
        raise
    finally:
        try:
            # A second Ctrl-C during heal-all must not skip it: ignore SIGINT meanwhile.
            saved_int = signal.signal(signal.SIGINT, signal.SIG_IGN) if in_main else None
            try:
                heal_all(ctx, reason)
            finally:
                if in_main:
                    # None: a handler not set from Python; the default is the best stand-in.
                    signal.signal(signal.SIGINT, saved_int if saved_int is not None
                                  else signal.default_int_handler)
        finally:
            if in_main:
                signal.signal(signal.SIGTERM, previous if previous is not None else signal.SIG_DFL)


# -- what is still in effect ------------------------------------------------
def _node_leftovers(node: Node, log_dir: str) -> list[str]:
    found = [f"{node.name}: iptables {r}" for r in rules_on(node)]
    stopped = sh(node, "ps -o stat= -C java | grep -c '^T' || true", check=False).strip()
    if stopped not in ("", "0"):
        found.append(f"{node.name}: {stopped} java process(es) stopped (SIGSTOP)")
    if node.role in BROKER_ROLES:
        f = shlex.quote(filler_path(log_dir))
        if sh(node, f"[ -e {f} ] && echo yes || true", check=False).strip() == "yes":
            found.append(f"{node.name}: disk filler {filler_path(log_dir)}")
        q = shlex.quote(log_dir)
        if sh(node, f"[ -d {q} ] && [ ! -w {q} ] && echo ro || true",
              check=False).strip() == "ro":
            found.append(f"{node.name}: {log_dir} not writable")
    return found


def leftovers(ctx: FaultContext) -> list[str]:
    """Human-readable list of fault effects still present; empty when clean."""
    found: list[str] = []
    for node in _fault_nodes(ctx):
        mount = host_mount_of(ctx, node)
        if mount is not None and mount_is_readonly(mount):
            found.append(f"{node.name}: log dir mount {mount} read-only")
        status = container_status(node)
        if status == "paused":
            # Reported, not skipped; nothing can be exec'd in a frozen container.
            found.append(f"{node.name}: container paused")
            continue
        if not node.is_running():
            found.append(f"{node.name}: container {status or 'not running'}")
            continue
        try:
            found += _node_leftovers(node, ctx.log_dir)
        except Exception as e:  # noqa: BLE001 - a node we cannot inspect is not clean
            found.append(f"{node.name}: cannot inspect ({e})")
    if ctx.toxiproxy is not None:
        for name in ctx.toxiproxy.proxies():
            toxics = ctx.toxiproxy.toxics(name)
            if toxics:
                found.append(f"toxiproxy {name}: toxics {sorted(toxics)}")
    return found


__all__ = ["heal_all", "heal_all_on_exit", "sweep", "leftovers", "HealAllReport", "CHAIN"]
