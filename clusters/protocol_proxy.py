"""A Kafka protocol proxy: relays client connections to brokers request by request,
and applies rules matched on the API, the broker, the client id and chance.

Where it sits: behind toxiproxy, on the harness's host. A cluster started with
`protocol_proxy: true` points each toxiproxy client proxy (`broker-<id>-client`)
at this proxy's listener for that broker instead of at the broker; the brokers still
advertise toxiproxy's addresses, so Metadata keeps every client on the chain
(client -> toxiproxy -> this proxy -> broker) without a byte of metadata rewritten.
It listens on the host's address on the cluster's Docker network, which both the
harness's own clients and the toxiproxy container reach.

    proxy = ProtocolProxy("172.20.0.1")
    port = proxy.add_route(1, ("172.20.0.3", 9092))      # broker 1
    proxy.set_rules("fault-1", [Rule("r1", DROP_RESPONSE, api_keys=frozenset({0}))],
                    sink=print, seed=7)
    proxy.clear_rules("fault-1")
    proxy.close()

It runs an asyncio loop on a thread of its own; rules change at run time from any
thread. Each request is framed (4-byte size), its header read (clusters/kafka_requests.py)
and matched against the rules in the order they were set; the first match acts.
Responses go back in request order (Kafka's clients rely on it): one we write
ourselves (`error`) waits behind the broker's answers to earlier requests.

Actions:
  delay_request   hold the request N ms before forwarding (requests after it wait too)
  delay_response  hold its response N ms (responses after it wait too)
  drop_response   forward it; swallow the broker's answer (the client never hears)
  disconnect_before  close both connections instead of forwarding
  disconnect_after   forward it, wait for the answer, then close without delivering it
  error           answer with an error code without forwarding (kafka_requests.ENCODABLE)
Every matched request goes to the rule's sink as one event (a dict).
"""
from __future__ import annotations

import asyncio
import logging
import random
import struct
import threading
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from clusters.kafka_requests import (
    PRODUCE,
    RequestHeader,
    can_encode_error,
    error_response,
    expects_response,
    parse_produce,
    parse_request_header,
    response_correlation_id,
)

log = logging.getLogger(__name__)

DELAY_REQUEST, DELAY_RESPONSE, DROP_RESPONSE = "delay_request", "delay_response", "drop_response"
DISCONNECT_BEFORE, DISCONNECT_AFTER, ERROR = "disconnect_before", "disconnect_after", "error"
ACTIONS = (DELAY_REQUEST, DELAY_RESPONSE, DROP_RESPONSE, DISCONNECT_BEFORE, DISCONNECT_AFTER,
           ERROR)
MAX_FRAME = 256 * 1024 * 1024
ANSWER_GRACE_S = 30.0       # how long a closed client's forwarded requests may take

Sink = Callable[[dict[str, Any]], None]
Upstream = tuple[str, int] | Callable[[], tuple[str, int]]


@dataclass(frozen=True)
class Rule:
    rule_id: str
    action: str
    api_keys: frozenset[int] | None = None      # None: every API
    brokers: frozenset[int] | None = None       # None: every broker
    client_id_prefix: str | None = None
    probability: float | None = None           # of a matching request; None: always
    count: int | None = None                    # act on at most this many; None: no limit
    delay_ms: int = 0
    error_code: int = 0

    def __post_init__(self) -> None:
        if self.action not in ACTIONS:
            raise ValueError(f"unknown action {self.action!r}; use one of {', '.join(ACTIONS)}")

    def matches(self, broker_id: int, header: RequestHeader) -> bool:
        if self.api_keys is not None and header.api_key not in self.api_keys:
            return False
        if self.brokers is not None and broker_id not in self.brokers:
            return False
        prefix = self.client_id_prefix
        return prefix is None or (header.client_id or "").startswith(prefix)


@dataclass
class _RuleSet:
    rules: list[Rule]
    sink: Sink
    rng: random.Random
    used: dict[str, int] = field(default_factory=dict)

    def pick(self, broker_id: int, header: RequestHeader) -> Rule | None:
        for rule in self.rules:
            if not rule.matches(broker_id, header):
                continue
            if rule.count is not None and self.used.get(rule.rule_id, 0) >= rule.count:
                continue
            if rule.probability is not None and self.rng.random() >= rule.probability:
                continue
            self.used[rule.rule_id] = self.used.get(rule.rule_id, 0) + 1
            return rule
        return None


@dataclass
class _Slot:
    """One answer the client waits for, in request order (None until it arrives)."""
    correlation_id: int
    rule: Rule | None = None
    response: bytes | None = None


class _Closed(Exception):
    pass


async def _read_frame(reader: asyncio.StreamReader) -> bytes:
    try:
        size = struct.unpack(">i", await reader.readexactly(4))[0]
        if not 0 <= size <= MAX_FRAME:
            raise _Closed(f"frame size {size}")
        return await reader.readexactly(size)
    except (asyncio.IncompleteReadError, ConnectionError) as e:
        raise _Closed(str(e)) from None


class _Connection:
    """One client connection and its own connection to the broker."""

    def __init__(self, proxy: "ProtocolProxy", broker_id: int, client: tuple, upstream: tuple):
        self.proxy, self.broker_id = proxy, broker_id
        self.client_reader, self.client_writer = client
        self.broker_reader, self.broker_writer = upstream
        self.slots: list[_Slot] = []
        self.by_correlation: dict[int, _Slot] = {}
        self.wake = asyncio.Event()
        self.closed = False
        self.client_gone = False

    async def run(self) -> None:
        tasks = [asyncio.create_task(t) for t in
                 (self._requests(), self._responses(), self._deliver())]
        await asyncio.wait(tasks, return_when=asyncio.FIRST_COMPLETED)
        self.close()
        for t in tasks:
            t.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)

    def close(self) -> None:
        if not self.closed:
            self.closed = True
            self.client_writer.close()
            self.broker_writer.close()
            self.wake.set()

    async def _requests(self) -> None:
        while not self.closed:
            try:
                frame = await _read_frame(self.client_reader)
            except _Closed:
                await self._await_answers()
                raise
            try:
                header = parse_request_header(frame)
            except (ValueError, struct.error):
                header = None
            if header is not None:
                self.proxy.requests_seen[(self.broker_id, header.api)] += 1
            rule = self.proxy._match(self.broker_id, header) if header else None
            if rule is None:
                await self._forward(frame, header, None)
                continue
            if rule.action == ERROR and not can_encode_error(header.api_key, header.version):
                self.proxy._record(rule, self.broker_id, header, frame,
                                   done="forwarded: version not encodable")
                await self._forward(frame, header, None)
                continue
            self.proxy._record(rule, self.broker_id, header, frame)
            if rule.action == DISCONNECT_BEFORE:
                raise _Closed("rule: disconnect before forwarding")
            if rule.action == ERROR:
                self._answer(header, error_response(frame, header, rule.error_code))
                continue
            if rule.action == DELAY_REQUEST:
                await asyncio.sleep(rule.delay_ms / 1000)
            await self._forward(frame, header, rule)

    async def _forward(self, frame: bytes, header: RequestHeader | None, rule: Rule | None) -> None:
        if header is not None and _answered(frame, header):
            slot = _Slot(header.correlation_id, rule)
            self.slots.append(slot)
            self.by_correlation[header.correlation_id] = slot
        self.broker_writer.write(struct.pack(">i", len(frame)) + frame)
        await self.broker_writer.drain()

    async def _await_answers(self) -> None:
        """The client went away: keep the broker's side open until it answered what we
        forwarded (a delayed request the client gave up on still lands and is handled,
        as it would be had the network held it), for at most ANSWER_GRACE_S."""
        deadline = asyncio.get_running_loop().time() + ANSWER_GRACE_S
        while self.by_correlation and asyncio.get_running_loop().time() < deadline:
            await asyncio.sleep(0.05)

    def _answer(self, header: RequestHeader, response: bytes) -> None:
        self.slots.append(_Slot(header.correlation_id, None, response))
        self.wake.set()

    async def _responses(self) -> None:
        """The broker's answers, each into its request's slot."""
        while not self.closed:
            frame = await _read_frame(self.broker_reader)
            slot = self.by_correlation.pop(response_correlation_id(frame), None)
            if slot is None:            # a request we could not read: pass it through in turn
                slot = _Slot(response_correlation_id(frame))
                self.slots.append(slot)
            slot.response = struct.pack(">i", len(frame)) + frame
            self.wake.set()

    async def _deliver(self) -> None:
        """Hand answers to the client in request order, as each slot's rule says."""
        while not self.closed:
            if not self.slots or self.slots[0].response is None:
                self.wake.clear()
                await self.wake.wait()
                continue
            slot = self.slots.pop(0)
            action = slot.rule.action if slot.rule else None
            if action == DISCONNECT_AFTER:
                raise _Closed("rule: disconnect after the broker answered")
            if action == DROP_RESPONSE:
                continue
            if action == DELAY_RESPONSE:
                await asyncio.sleep(slot.rule.delay_ms / 1000)
            if self.client_gone:
                continue
            try:
                self.client_writer.write(slot.response)
                await self.client_writer.drain()
            except (ConnectionError, OSError):
                self.client_gone = True       # answers still drain from the broker side


def _answered(frame: bytes, header: RequestHeader) -> bool:
    try:
        return expects_response(frame, header)
    except (ValueError, struct.error, IndexError):
        return True


class ProtocolProxy:
    """Listeners, one per broker, on `bind_host`; a thread running their loop."""

    def __init__(self, bind_host: str):
        self.bind_host = bind_host
        self.routes: dict[int, Upstream] = {}             # broker id -> where it forwards
        self.ports: dict[int, int] = {}                   # broker id -> our listening port
        self._servers: list[asyncio.base_events.Server] = []
        self._rule_sets: dict[str, _RuleSet] = {}
        self._owners: dict[str, tuple[str, Sink]] = {}    # rule id -> (its set, its sink)
        # (broker id, API name) -> requests relayed: what went through, rule or not
        self.requests_seen: Counter[tuple[int, str]] = Counter()
        self._lock = threading.Lock()
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, name="protocol-proxy",
                                        daemon=True)
        self._thread.start()

    def _call(self, coro, timeout: float = 10):
        return asyncio.run_coroutine_threadsafe(coro, self._loop).result(timeout)

    def add_route(self, broker_id: int, upstream: Upstream, port: int = 0) -> int:
        """Listen for broker `broker_id`'s clients; returns the port listened on.
        `upstream`: the broker's (host, port), or a function asked at each new
        connection (a re-created broker container may have a new address)."""
        async def serve(reader, writer):
            await self._serve(broker_id, reader, writer)
        server = self._call(asyncio.start_server(serve, self.bind_host, port))
        self._servers.append(server)
        self.routes[broker_id] = upstream
        self.ports[broker_id] = server.sockets[0].getsockname()[1]
        return self.ports[broker_id]

    async def _serve(self, broker_id: int, reader, writer) -> None:
        route = self.routes[broker_id]
        try:
            host, port = route() if callable(route) else route
            upstream = await asyncio.wait_for(asyncio.open_connection(host, port), 10)
        except (TimeoutError, OSError, LookupError):
            writer.close()
            return
        try:
            await _Connection(self, broker_id, (reader, writer), upstream).run()
        except Exception:  # noqa: BLE001 - one connection's failure must not stop the proxy
            log.exception("protocol proxy connection to broker %s failed", broker_id)

    # -- rules ------------------------------------------------------------------------
    def set_rules(self, key: str, rules: list[Rule], sink: Sink, seed: int = 0) -> None:
        """Apply `rules` (under `key`, e.g. a fault id) from the next request on."""
        with self._lock:
            self._rule_sets[key] = _RuleSet(list(rules), sink, random.Random(seed))

    def clear_rules(self, key: str) -> dict[str, int]:
        """Stop applying `key`'s rules; returns how often each acted."""
        with self._lock:
            removed = self._rule_sets.pop(key, None)
        return dict(removed.used) if removed else {}

    def _match(self, broker_id: int, header: RequestHeader) -> Rule | None:
        with self._lock:
            for key, rule_set in self._rule_sets.items():
                rule = rule_set.pick(broker_id, header)
                if rule is not None:
                    self._owners[rule.rule_id] = (key, rule_set.sink)
                    return rule
        return None

    def _record(self, rule: Rule, broker_id: int, header: RequestHeader, frame: bytes,
                done: str | None = None) -> None:
        key, sink = self._owners[rule.rule_id]
        event = {"rule_set": key, "rule": rule.rule_id, "action": done or rule.action,
                 "api": header.api, "api_version": header.version,
                 "correlation_id": header.correlation_id, "client_id": header.client_id,
                 "broker": broker_id}
        if rule.action in (DELAY_REQUEST, DELAY_RESPONSE):
            event["delay_ms"] = rule.delay_ms
        if rule.action == ERROR:
            event["error_code"] = rule.error_code
        if header.api_key == PRODUCE:       # what a lost answer leaves in doubt
            try:
                event["records"] = parse_produce(frame, header).records
            except (ValueError, struct.error, IndexError):
                pass
        try:
            sink(event)
        except Exception:  # noqa: BLE001 - recording must not break the relay
            log.exception("protocol proxy: recording an event failed")

    def close(self) -> None:
        async def shut() -> None:
            for server in self._servers:
                server.close()
            for task in asyncio.all_tasks():
                if task is not asyncio.current_task():
                    task.cancel()
        if self._loop.is_running():
            try:
                self._call(shut(), timeout=5)
            except Exception:  # noqa: BLE001 - closing anyway
                pass
            self._loop.call_soon_threadsafe(self._loop.stop)
            self._thread.join(5)
