"""Teardown on the way out: every live cluster is stopped at interpreter exit,
and SIGTERM/SIGHUP become KeyboardInterrupt so `with` blocks unwind (Python's
default for SIGTERM is to die without running any finalizer)."""
from __future__ import annotations

import atexit
import signal
import threading
import weakref

_live: "weakref.WeakSet" = weakref.WeakSet()
_installed = False


def _raise_interrupt(signum, frame):
    raise KeyboardInterrupt(f"signal {signum}")


def _install() -> None:
    global _installed
    if _installed:
        return
    _installed = True
    atexit.register(stop_all)
    if threading.current_thread() is threading.main_thread():
        for sig in (signal.SIGTERM, signal.SIGHUP):
            if signal.getsignal(sig) in (signal.SIG_DFL, None):
                signal.signal(sig, _raise_interrupt)


def register(cluster) -> None:
    _install()
    _live.add(cluster)


def unregister(cluster) -> None:
    _live.discard(cluster)


def stop_all() -> None:
    for cluster in list(_live):
        try:
            cluster.stop()
        except Exception:
            pass
