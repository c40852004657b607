"""The toxiproxy adapter against fake toxiproxy HTTP servers on loopback
(the real server is exercised by the integration tests)."""
import json
import random
import re
import socket
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from test_fault_fakes import FakeCluster

from faults.base import FaultContext
from faults.toxics import LinkToxic, latency, proxies_of, slicer
from faults.toxiproxy_adapter import ToxiproxyAdapter, ToxiproxyError


class FakeToxiproxy(BaseHTTPRequestHandler):
    """Just enough of toxiproxy's HTTP API; state lives on the server object."""

    def log_message(self, *a):
        pass

    def _send(self, code, body=None):
        data = json.dumps(body if body is not None else {}).encode()
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def _body(self):
        n = int(self.headers.get("Content-Length") or 0)
        return json.loads(self.rfile.read(n) or b"{}")

    @property
    def proxies(self):
        return self.server.proxies

    def do_GET(self):
        if self.path == "/version":
            return self._send(200, self.server.name)
        if self.path == "/proxies":
            return self._send(200, {n: {k: v for k, v in p.items() if k != "toxics"}
                                    for n, p in self.proxies.items()})
        m = re.fullmatch(r"/proxies/([^/]+)/toxics", self.path)
        if m and m[1] in self.proxies:
            return self._send(200, list(self.proxies[m[1]]["toxics"].values()))
        self._send(404, {"error": "not found"})

    def do_POST(self):
        body = self._body()
        if self.path == "/reset":
            for p in self.proxies.values():
                p["toxics"], p["enabled"] = {}, True
            return self._send(204)
        if self.path == "/proxies":
            if body["name"] in self.proxies:
                return self._send(409, {"error": "exists"})
            self.proxies[body["name"]] = {"name": body["name"], "listen": body["listen"],
                                          "upstream": body["upstream"], "enabled": True,
                                          "toxics": {}}
            return self._send(201, {k: v for k, v in self.proxies[body["name"]].items()
                                    if k != "toxics"})
        m = re.fullmatch(r"/proxies/([^/]+)/toxics", self.path)
        if m and m[1] in self.proxies:
            toxics = self.proxies[m[1]]["toxics"]
            if body["name"] in toxics:
                return self._send(409, {"error": "toxic already exists"})
            toxics[body["name"]] = body
            return self._send(200, body)
        m = re.fullmatch(r"/proxies/([^/]+)", self.path)
        if m and m[1] in self.proxies:
            self.proxies[m[1]]["enabled"] = body["enabled"]
            return self._send(200, {})
        self._send(404, {"error": "not found"})

    def do_DELETE(self):
        # toxiproxy holding a toxic's removal while it drains busy links (its issues 412, 558)
        time.sleep(max(0.0, getattr(self.server, "busy_until", 0) - time.monotonic()))
        m = re.fullmatch(r"/proxies/([^/]+)/toxics/([^/]+)", self.path)
        if m and m[1] in self.proxies and m[2] in self.proxies[m[1]]["toxics"]:
            del self.proxies[m[1]]["toxics"][m[2]]
            return self._send(204)
        m = re.fullmatch(r"/proxies/([^/]+)", self.path)
        if m and m[1] in self.proxies:
            del self.proxies[m[1]]
            return self._send(204)
        self._send(404, {"error": "not found"})


@pytest.fixture
def servers():
    started = []

    def start(name):
        srv = ThreadingHTTPServer(("127.0.0.1", 0), FakeToxiproxy)
        srv.name, srv.proxies = name, {}
        threading.Thread(target=srv.serve_forever, daemon=True).start()
        started.append(srv)
        return srv
    yield start
    for srv in started:
        srv.shutdown()
        srv.server_close()


def adapter(srv, timeout_s=2.0):
    return ToxiproxyAdapter("127.0.0.1", srv.server_address[1], timeout_s=timeout_s)


def test_two_servers_in_one_process(servers):
    a, b = adapter(servers("A")), adapter(servers("B"))
    a.ensure_proxy("p", "0.0.0.0:19001", "kafka-1:9092")
    b.ensure_proxy("q", "0.0.0.0:19002", "kafka-2:9092")
    assert a.version() == '"A"' and b.version() == '"B"'
    assert list(a.proxies()) == ["p"] and list(b.proxies()) == ["q"]
    assert a.proxies()["p"].listen == "0.0.0.0:19001"     # not the library's 127.0.0.1 default


def test_ensure_proxy_is_idempotent_and_recreates_a_changed_one(servers):
    a = adapter(servers("A"))
    a.ensure_proxy("p", "0.0.0.0:1", "x:1")
    a.ensure_proxy("p", "0.0.0.0:1", "x:1")
    assert a.ensure_proxy("p", "0.0.0.0:1", "y:2").upstream == "y:2"


def test_set_toxic_replaces_instead_of_failing(servers):
    a = adapter(servers("A"))
    a.ensure_proxy("p", "0.0.0.0:1", "x:1")
    a.set_toxic("p", "lat", "latency", {"latency": 100, "jitter": 10})
    a.set_toxic("p", "lat", "latency", {"latency": 500, "jitter": 0})
    toxics = a.toxics("p")
    assert list(toxics) == ["lat"] and toxics["lat"].attributes == {"latency": 500, "jitter": 0}
    assert a.remove_toxic("p", "lat") is True
    assert a.remove_toxic("p", "lat") is False            # idempotent
    assert a.remove_toxic("gone", "lat") is False
    with pytest.raises(ToxiproxyError, match="unknown toxic type"):
        a.set_toxic("p", "x", "netem", {})
    with pytest.raises(ToxiproxyError, match="no toxiproxy proxy"):
        a.set_toxic("gone", "x", "latency", {})


def test_a_server_that_never_answers_times_out():
    hang = socket.socket()
    hang.bind(("127.0.0.1", 0))
    hang.listen(8)                                         # accepts, never replies
    try:
        a = ToxiproxyAdapter("127.0.0.1", hang.getsockname()[1], timeout_s=0.5)
        t0 = time.monotonic()
        with pytest.raises(ToxiproxyError):
            a.proxies()
        assert time.monotonic() - t0 < 5
        assert a.reachable() is False
    finally:
        hang.close()


def test_library_state_is_restored_after_each_call(servers):
    import toxiproxy.api as api
    before = (api.APIConsumer.host, api.APIConsumer.port, api.requests)
    adapter(servers("A")).proxies()
    assert (api.APIConsumer.host, api.APIConsumer.port, api.requests) == before


def test_link_toxic_adds_per_proxy_and_stream_and_heals_exactly(servers, tmp_path):
    srv = servers("A")
    a = adapter(srv)
    for i in (1, 2, 3):
        a.ensure_proxy(f"broker-{i}-client", f"0.0.0.0:{19000 + i}", f"kafka-{i}:9092")
    a.ensure_proxy("broker-1-internal", "0.0.0.0:29001", "kafka-1:9093")
    ctx = FaultContext(cluster=FakeCluster(tmp_path), toxiproxy=a, rng=random.Random(0))
    from faults.selectors import node
    f = LinkToxic(latency(200, 50), proxies_of(node(1), ("client", "internal")))
    f.inject(ctx)
    assert f.detail["proxies"] == ["broker-1-client", "broker-1-internal"]
    assert {t.stream for t in a.toxics("broker-1-client").values()} == {"upstream", "downstream"}
    assert a.toxics("broker-2-client") == {}
    a.set_toxic("broker-1-client", "someone-else", "latency", {"latency": 1})
    f.heal(ctx)
    f.heal(ctx)
    assert list(a.toxics("broker-1-client")) == ["someone-else"]
    assert a.toxics("broker-1-internal") == {}
    g = LinkToxic(slicer(), proxies_of())                  # every broker's client link
    g.inject(ctx)
    assert all(a.toxics(f"broker-{i}-client") for i in (1, 2, 3))
    g.heal(ctx)
    from faults.base import FaultError
    with pytest.raises(FaultError, match="no toxiproxy proxies"):
        LinkToxic(latency(1), proxies_of(node(2), ("internal",))).inject(ctx)


def test_a_toxic_removal_toxiproxy_holds_is_tried_again_until_it_answers(servers):
    """The first DELETE is held past the request timeout (the server removes the toxic
    later); the adapter tries again and counts it removed, instead of failing the heal."""
    srv = servers("busy")
    a = adapter(srv, timeout_s=0.5)
    a.ensure_proxy("p", "127.0.0.1:1", "127.0.0.1:2")
    a.set_toxic("p", "slow", "latency", {"latency": 100})
    srv.busy_until = time.monotonic() + 2.0
    t0 = time.monotonic()
    assert a.remove_toxic("p", "slow") is True
    assert 1.5 < time.monotonic() - t0 < 6
    assert a.toxics("p") == {}
    # past its patience, it gives up with the server's silence named
    srv.busy_until = time.monotonic() + 30
    a.set_toxic("p", "slow", "latency", {"latency": 100})
    with pytest.raises(ToxiproxyError, match="Read timed out"):
        a.remove_toxic("p", "slow", patience_s=2.0)
    srv.busy_until = 0
