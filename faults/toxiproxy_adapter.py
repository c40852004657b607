"""A thin adapter over toxiproxy-python that keeps its limits out of the rest
of the code:

- the library keeps one server address per process (class attributes on
  APIConsumer): every call here holds a lock and points it at *this*
  adapter's server for the duration of the call, so adapters for several
  servers can coexist;
- it sets no request timeouts: calls go through a `requests` shim that adds
  this adapter's timeout, so a frozen toxiproxy cannot hang the harness;
- it cannot update a toxic: `set_toxic` replaces it (remove, then add);
- toxiproxy itself can hold a toxic's removal (and every call after it) for tens of
  seconds while traffic flows through a latency toxic (its issues 412 and 558; seen here
  on Kafka's client links): adding or removing a toxic is tried again while the server
  accepts the call but does not answer, up to a patience of its own;
- `create` listens on 127.0.0.1 by default and fails on an existing proxy:
  `ensure_proxy` listens where asked and re-creates a proxy that differs.

The rest of the harness only uses this class.
"""
from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import requests
import toxiproxy.api as _api
from toxiproxy import Toxiproxy
from toxiproxy.exceptions import InvalidToxic, NotFound, ProxyExists

_LOCK = threading.RLock()   # guards APIConsumer's class-wide host/port and the requests shim

TOXIC_TYPES = ("latency", "bandwidth", "timeout", "reset_peer", "slow_close", "slicer",
               "limit_data")
STREAMS = ("upstream", "downstream")
SET_PATIENCE_S, REMOVE_PATIENCE_S = 30.0, 60.0
BUSY_RETRY_S = 1.0


class ToxiproxyError(RuntimeError):
    """The toxiproxy server refused a request or did not answer in time."""


class _TimeoutRequests:
    """Stands in for the `requests` module inside toxiproxy.api."""

    def __init__(self, timeout_s: float):
        self.timeout_s = timeout_s

    def get(self, url, **kw):
        return requests.get(url, timeout=kw.pop("timeout", self.timeout_s), **kw)

    def post(self, url, **kw):
        return requests.post(url, timeout=kw.pop("timeout", self.timeout_s), **kw)

    def delete(self, url, **kw):
        return requests.delete(url, timeout=kw.pop("timeout", self.timeout_s), **kw)


@dataclass(frozen=True)
class ProxyInfo:
    name: str
    listen: str
    upstream: str
    enabled: bool


@dataclass(frozen=True)
class ToxicInfo:
    name: str
    type: str
    stream: str
    toxicity: float
    attributes: dict[str, Any]


class ToxiproxyAdapter:
    def __init__(self, host: str = "127.0.0.1", port: int = 8474, timeout_s: float = 5.0):
        self.host, self.port, self.timeout_s = host, int(port), timeout_s
        self._server = Toxiproxy()

    def __repr__(self) -> str:
        return f"ToxiproxyAdapter({self.host}:{self.port})"

    @contextmanager
    def _bound(self) -> Iterator[Toxiproxy]:
        with _LOCK:
            saved = (_api.APIConsumer.host, _api.APIConsumer.port, _api.requests)
            _api.APIConsumer.host, _api.APIConsumer.port = self.host, self.port
            _api.requests = _TimeoutRequests(self.timeout_s)
            try:
                yield self._server
            except (requests.RequestException, InvalidToxic, ProxyExists) as e:
                raise ToxiproxyError(f"toxiproxy {self.host}:{self.port}: "
                                     f"{type(e).__name__}: {e}") from e
            finally:
                _api.APIConsumer.host, _api.APIConsumer.port, _api.requests = saved

    # -- server ----------------------------------------------------------
    def version(self) -> str:
        with self._bound():
            resp = _api.APIConsumer.get("/version")
            return resp.content.decode().strip()

    def reachable(self) -> bool:
        try:
            self.version()
            return True
        except ToxiproxyError:
            return False

    def reset(self) -> None:
        """Enable every proxy and remove every toxic."""
        with self._bound() as server:
            server.reset()

    # -- proxies ---------------------------------------------------------
    def proxies(self) -> dict[str, ProxyInfo]:
        with self._bound() as server:
            return {name: ProxyInfo(p.name, p.listen, p.upstream, bool(p.enabled))
                    for name, p in server.proxies().items()}

    def ensure_proxy(self, name: str, listen: str, upstream: str) -> ProxyInfo:
        with self._bound() as server:
            existing = server.get_proxy(name)
            if existing is not None and (existing.listen, existing.upstream) != (listen, upstream):
                existing.destroy()
                existing = None
            if existing is None:
                server.create(upstream=upstream, name=name, listen=listen, enabled=True)
        return self.proxies()[name]

    def delete_proxy(self, name: str) -> None:
        with self._bound() as server:
            proxy = server.get_proxy(name)
            if proxy is not None:
                try:
                    proxy.destroy()
                except NotFound:
                    pass

    def set_enabled(self, name: str, enabled: bool) -> None:
        with self._bound() as server:
            proxy = self._proxy(server, name)
            proxy.enable() if enabled else proxy.disable()

    # -- toxics ----------------------------------------------------------
    def toxics(self, proxy: str) -> dict[str, ToxicInfo]:
        with self._bound() as server:
            found = self._proxy(server, proxy).toxics()
            return {n: ToxicInfo(t.name, t.type, t.stream, float(t.toxicity), dict(t.attributes))
                    for n, t in found.items()}

    def set_toxic(self, proxy: str, name: str, type: str, attributes: dict[str, Any],
                  stream: str = "downstream", toxicity: float = 1.0,
                  patience_s: float = SET_PATIENCE_S) -> None:
        """Add the toxic, replacing one of the same name (the library cannot update)."""
        if type not in TOXIC_TYPES:
            raise ToxiproxyError(f"unknown toxic type {type!r}; use one of {TOXIC_TYPES}")
        if stream not in STREAMS:
            raise ToxiproxyError(f"stream must be one of {STREAMS}, got {stream!r}")
        self._patiently(lambda: self._set_toxic(proxy, name, type, attributes, stream, toxicity),
                        patience_s)

    def _set_toxic(self, proxy: str, name: str, type: str, attributes: dict[str, Any],
                   stream: str, toxicity: float) -> None:
        with self._bound() as server:
            p = self._proxy(server, proxy)
            if p.get_toxic(name) is not None:
                try:
                    p.destroy_toxic(name)
                except NotFound:
                    pass
            p.add_toxic(name=name, type=type, stream=stream, toxicity=toxicity,
                        attributes=dict(attributes))

    def remove_toxic(self, proxy: str, name: str, patience_s: float = REMOVE_PATIENCE_S) -> bool:
        """Remove a toxic; False (not an error) when it or its proxy is gone, unless a try
        that timed out is what removed it."""
        removed, timed_out = self._patiently(lambda: self._remove_toxic(proxy, name), patience_s)
        return removed or timed_out

    def _patiently(self, call: Callable[[], Any], patience_s: float) -> tuple[Any, bool]:
        """`call`, tried again while toxiproxy accepts it but does not answer within the
        request timeout, until patience_s has passed; with whether a try timed out."""
        end, timed_out = time.monotonic() + patience_s, False
        while True:
            try:
                return call(), timed_out
            except ToxiproxyError as e:
                busy = isinstance(e.__cause__, requests.ReadTimeout)
                if not busy or time.monotonic() + BUSY_RETRY_S + self.timeout_s > end:
                    raise
                timed_out = True
                time.sleep(BUSY_RETRY_S)

    def _remove_toxic(self, proxy: str, name: str) -> bool:
        with self._bound() as server:
            p = server.get_proxy(proxy)
            if p is None:
                return False
            try:
                p.destroy_toxic(name)
                return True
            except NotFound:
                return False

    @staticmethod
    def _proxy(server: Toxiproxy, name: str):
        proxy = server.get_proxy(name)
        if proxy is None:
            raise ToxiproxyError(f"no toxiproxy proxy named {name!r}")
        return proxy
