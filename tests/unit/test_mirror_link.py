"""Faults on the link between a mirrored run's clusters (faults/link.py) without a
cluster: the iptables rules a link partition adds in MM2's namespace and removes on heal,
the addresses it cuts (brokers, advertised addresses, MM2's link proxy), a heal after
MM2 was started again, the latency toxic on MM2's own link proxy, their words; and the
link proxy's routes and DNAT rules (families/mirror/link.py)."""
from __future__ import annotations

from types import SimpleNamespace

import pytest

from families.mirror.link import LINK_BASE, Route, dnat_script, routes
from faults.base import FaultContext, FaultError
from faults.catalog import resolve_fault
from faults.healall import heal_all
from faults.link import add_script, hosts_of, remove_script


class Cluster:
    def __init__(self, ips, bootstrap):
        self._brokers = [SimpleNamespace(name=f"kafka-{i}", ip=ip) for i, ip in enumerate(ips)]
        self._bootstrap = bootstrap

    def brokers(self):
        return self._brokers

    def bootstrap_servers(self):
        return self._bootstrap


class Toxiproxy:
    def __init__(self, names):
        self.names, self.toxics = names, {}

    def proxies(self):
        return {n: None for n in self.names}

    def set_toxic(self, proxy, name, type, attributes, stream, toxicity):
        self.toxics[(proxy, name)] = (type, attributes, stream)

    def remove_toxic(self, proxy, name):
        self.toxics.pop((proxy, name))


class MM2:
    """What faults/link.py asks of MirrorMaker 2 (families/mirror/mm2.MirrorMaker)."""
    name = "kh-run-mm2-ab12"

    def __init__(self, link_ip=None, proxies=(), exit_code=0):
        self.scripts, self.state, self.exit_code = [], "running", exit_code
        self.link_ip, self.proxies = link_ip, list(proxies)
        self.link_toxiproxy = Toxiproxy(self.proxies)

    def exec(self, script):
        self.scripts.append(script)
        return self.exit_code, "iptables: no permission" if self.exit_code else ""

    def status(self):
        return self.state

    def link_addresses(self, side):
        return [self.link_ip] if self.link_ip and side == "source" else []

    def link_proxy_names(self):
        return self.proxies


def _ctx(mm2):
    ctx = FaultContext(cluster=Cluster(["10.1.0.2", "10.1.0.3"], "10.1.0.9:19001,10.1.0.9:19002"),
                       processes={"mirror-maker": mm2})
    ctx.others["target"] = FaultContext(cluster=Cluster(["10.2.0.2"], "10.2.0.2:9092"))
    return ctx


def test_the_rules_drop_both_ways_and_heal_deletes_exactly_them():
    add = add_script(["10.1.0.2"])
    assert "iptables -w -I INPUT 1 -j HARNESS" in add and "iptables -w -I OUTPUT 1 -j HARNESS" in add
    assert "-A HARNESS -s 10.1.0.2 -j DROP" in add and "-A HARNESS -d 10.1.0.2 -j DROP" in add
    remove = remove_script(["10.1.0.2"])
    assert "-D HARNESS -s 10.1.0.2 -j DROP" in remove and "-D HARNESS -d 10.1.0.2 -j DROP" in remove
    assert remove.endswith("true") and "-A " not in remove
    assert hosts_of("a:1, b:2,") == ["a", "b"]


def test_a_source_partition_cuts_every_address_mm2_reaches_the_source_at():
    mm2 = MM2(link_ip="10.1.0.7")
    ctx = _ctx(mm2)
    fault = resolve_fault("link-partition", None, None, "f").build()
    fault.inject(ctx)
    # the brokers, the advertised toxiproxy, MM2's own link proxy; not the target's broker
    assert fault.detail["addresses"] == ["10.1.0.2", "10.1.0.3", "10.1.0.7", "10.1.0.9"]
    assert "10.2.0.2" not in mm2.scripts[0] and "-d 10.1.0.7 -j DROP" in mm2.scripts[0]
    assert fault.detail["side"] == "source" and fault.detail["container"] == mm2.name
    words = fault.words(fault.name, [], fault.detail)
    assert "cut off" not in words and "MirrorMaker 2 to the source cluster cut" in words
    heal_all(ctx, "completed")
    assert "-D HARNESS -s 10.1.0.9 -j DROP" in mm2.scripts[1] and not ctx.active


def test_a_target_partition_cuts_the_target_alone():
    mm2 = MM2(link_ip="10.1.0.7")
    ctx = _ctx(mm2)
    fault = resolve_fault("link-partition", None, {"side": "target"}, "f").build()
    fault.inject(ctx)
    assert fault.detail["addresses"] == ["10.2.0.2"]
    assert "to the target cluster" in fault.words(fault.name, [], fault.detail)


def test_a_heal_after_mm2_was_started_again_removes_nothing_and_a_failed_rule_fails_the_inject():
    mm2 = MM2()
    ctx = _ctx(mm2)
    fault = resolve_fault("link-partition", None, None, "f").build()
    fault.inject(ctx)
    mm2.state = "exited"                   # killed: its next start has a fresh namespace
    fault.heal(ctx)
    assert len(mm2.scripts) == 1 and fault.healed
    refused = resolve_fault("link-partition", None, None, "f").build()
    with pytest.raises(FaultError, match="no permission"):
        refused.inject(_ctx(MM2(exit_code=4)))


def test_a_link_cut_while_an_mm2_pause_holds_mm2_says_so_and_runs_nothing():
    """Seen in CI: a link-partition at the second an mm2-pause healed; docker's answer
    was a 409 "is paused". The fault says what held MM2 and what to do."""
    mm2 = MM2(link_ip="10.1.0.7")
    mm2.state = "paused"
    fault = resolve_fault("link-partition", None, None, "f").build()
    with pytest.raises(FaultError, match="is paused .an mm2-pause holds it.*outside the pause"):
        fault.inject(_ctx(mm2))
    assert mm2.scripts == []


def test_link_latency_adds_a_toxic_to_mm2s_link_proxies_and_removes_it():
    mm2 = MM2(link_ip="10.1.0.7", proxies=["link-0", "link-1"])
    ctx = _ctx(mm2)
    fault = resolve_fault("link-latency", None, {"latency_ms": 250, "jitter_ms": 10}, "f").build()
    fault.inject(ctx)
    toxics = mm2.link_toxiproxy.toxics
    assert {p for p, _ in toxics} == {"link-0", "link-1"} and len(toxics) == 4   # both streams
    assert all(v[:2] == ("latency", {"latency": 250, "jitter": 10}) for v in toxics.values())
    assert ctx.toxiproxy is None            # the cluster's toxiproxy (none here) is not touched
    assert "delayed 250 ms ± 10 ms each way" in fault.words(fault.name, [], fault.detail)
    fault.heal(ctx)
    assert not toxics


def test_link_latency_without_a_link_proxy_fails_its_inject():
    fault = resolve_fault("link-latency", None, None, "f").build()
    with pytest.raises(FaultError, match="link_proxy: true"):
        fault.inject(_ctx(MM2()))


def test_the_link_proxy_routes_each_advertised_address_through_a_port_of_its_own():
    rs = routes("10.1.0.2:9092, 10.1.0.3:9092")
    assert rs == [Route("link-0", "10.1.0.2", 9092, LINK_BASE), Route("link-1", "10.1.0.3", 9092,
                                                                       LINK_BASE + 1)]
    script = dnat_script("10.1.0.7", rs)
    assert script.count("&&") == 1 and "-t nat -A OUTPUT -p tcp -d 10.1.0.3 --dport 9092 " \
        f"-j DNAT --to-destination 10.1.0.7:{LINK_BASE + 1}" in script
