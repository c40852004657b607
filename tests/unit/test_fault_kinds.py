"""A fault kind is one object (faults.catalog.FaultKind): the names its faults carry, its
words, its plot colour, its needs and which clusters refuse it; and a new kind is one
such object, registered, with nothing else to edit."""
from __future__ import annotations

import json
import random
from dataclasses import replace

import matplotlib.pyplot as plt
import pytest
from matplotlib.colors import to_rgba
from pydantic import Field
from test_fault_catalog import VALID
from test_fault_fakes import FakeCluster

from clusters.spec import ClusterSpec
from core.errors import SpecError
from core.history import EventLog, read_table
from faults.base import BaseFault, FaultContext, nodes_in_words
from faults.catalog import (
    KINDS,
    NONE,
    ON_CONTAINERS,
    TOOLS_OVER_PLAINTEXT,
    TOXIC_ATTRIBUTES,
    FaultKind,
    Params,
    fault_colours,
    make_fault,
    register,
    words_of,
)
from faults.controller import METHODS as FAILOVER_METHODS
from faults.needs import (
    DYNAMIC_QUORUM,
    KRAFT,
    NEEDS,
    REPLACEABLE,
    TOXIPROXY,
    TOXIPROXY_REPLICATION,
    ZOOKEEPER_MODE,
    Need,
)
from harness.scenario import load_scenario
from spark_reports import plots


# -- the names a kind's faults carry ------------------------------------------------------
def _built_names() -> list[tuple[str, str]]:
    """(kind, the name of a fault it built) for every kind and every variant of its params
    that changes the name."""
    variants = [(kind, VALID[kind][0], VALID[kind][1]) for kind in KINDS]
    variants += [("toxic", None, {"type": t}) for t in TOXIC_ATTRIBUTES]
    variants += [("controller-failover", None, {"method": m}) for m in FAILOVER_METHODS]
    variants += [("rolling-restart", None, {"signal": s}) for s in ("clean", "hard")]
    return [(kind, make_fault(kind, target, params, "f").name) for kind, target, params in variants]


@pytest.mark.parametrize("kind,name", _built_names())
def test_every_fault_a_kind_builds_carries_one_of_its_names(kind, name):
    assert name in KINDS[kind].fault_names
    assert words_of(name) is KINDS[kind].words


def test_kinds_that_share_a_fault_name_tell_and_draw_it_alike():
    by_name: dict[str, list[FaultKind]] = {}
    for kind in KINDS.values():
        for name in kind.fault_names:
            by_name.setdefault(name, []).append(kind)
    shared = {n: ks for n, ks in by_name.items() if len(ks) > 1}
    assert set(shared) == {"pause"}                       # pause and sigstop: both a Pause
    for kinds in shared.values():
        assert len({(k.words, k.colour) for k in kinds}) == 1


# -- words --------------------------------------------------------------------------------
GRUDGE = {"kafka-1": ["a", "b"], "kafka-2": ["c"], "kafka-3": ["d"]}
# (fault name, target node names, detail, the words): what the report has always said
WORDS = [
    ("kill", ["kafka-1"], {"signal": "SIGKILL"}, "kafka-1 killed (SIGKILL)"),
    ("terminate", ["kafka-1", "kafka-2"], {"signal": "SIGTERM"}, "kafka-1, kafka-2 stopped cleanly (SIGTERM)"),
    ("kill", [], {}, "no node stopped"),
    ("bounce-clean", ["kafka-2"], {"times": 2}, "kafka-2 stopped cleanly (SIGTERM) and started again, 2 time(s)"),
    ("bounce-hard", ["kafka-2"], {}, "kafka-2 killed (SIGKILL) and started again, 1 time(s)"),
    ("pause", ["kafka-3"], {"method": "docker"}, "kafka-3 paused (docker): alive but silent"),
    ("pause", ["kafka-3"], {}, "kafka-3 paused (SIGSTOP): alive but silent"),
    ("partition", ["kafka-1", "kafka-2", "kafka-3"], {"shape": "isolate", "grudge": GRUDGE},
     "kafka-1 cut off from every other node; clients still reach it"),
    ("partition", ["kafka-2"], {"shape": "cut-clients"},
     "clients cut off from kafka-2; the nodes still reach each other"),
    ("partition", [], {"shape": "majority-minority", "grudge": {"b": [], "a": []}},
     "the cluster split in two (a, b each lose the other side)"),
    ("partition", [], {"shape": "ring", "grudge": {"y": [], "x": []}},
     "a ring partition over x, y (each node sees only some others)"),
    ("partition", ["kafka-1"], {"shape": "donut"}, "network partition (donut) over kafka-1"),
    ("controller-kill", ["kafka-1"], {"method": "kill", "previous_controller": "kafka-3"},
     "the active controller kafka-3 killed"),
    ("controller-isolate", ["kafka-1"], {"method": "isolate"},
     "the active controller kafka-1 cut off from every other node"),
    ("controller-add", [], {}, "the active controller no node stopped"),
    ("disk-full", ["kafka-1"], {}, "kafka-1's log dir filled to the last byte"),
    ("log-dir-unwritable", ["kafka-1"], {}, "kafka-1's log dir made unwritable"),
    ("toxic-latency", [], {"toxic": "latency", "attributes": {"latency": 5}},
     "latency on the links of no node ({'latency': 5})"),
    ("toxic-slicer", ["kafka-2"], {}, "slicer on the links of kafka-2 ({})"),
    ("rolling-restart-hard", ["kafka-1", "kafka-2"], {},
     "kafka-1, kafka-2 restarted one at a time, each waited for until its ISR was full"),
    ("rolling-upgrade", ["kafka-1"], {"to_version": "4.1.0"},
     "kafka-1 upgraded one at a time to Kafka 4.1.0"),
    ("zk-session-expiry", ["kafka-2"], {}, "kafka-2's ZooKeeper session expired"),
    ("zk-migration", ["kafka-1"], {}, "the cluster migrated from ZooKeeper to KRaft"),
    ("exec", ["kafka-1"], {"commands": []}, "exec on kafka-1"),
    ("meteor", [], {}, "meteor on no node"),
]


@pytest.mark.parametrize("name,nodes,detail,words", WORDS, ids=[f"{w[0]}-{i}" for i, w in enumerate(WORDS)])
def test_each_fault_is_told_in_its_kinds_words(name, nodes, detail, words):
    assert words_of(name)(name, nodes, detail) == words


def test_a_built_fault_writes_its_kinds_words_into_its_rows(tmp_path):
    cluster = FakeCluster(tmp_path / "c", brokers=3)
    with EventLog(tmp_path, "r") as events:
        ctx = FaultContext(cluster=cluster, events=events, rng=random.Random(0))
        fault = make_fault("kill", {"node": 2}, None, "f")
        fault.inject(ctx)
        fault.heal(ctx)
    rows = [r for r in read_table(tmp_path, "events").to_pylist() if r["kind"] in ("fault", "heal")]
    assert [json.loads(r["detail"])["description"] for r in rows] == ["kafka-2 killed (SIGKILL)"] * 2


# -- colours ------------------------------------------------------------------------------
# Every fault name the history can hold -> its band's colour, as the report has drawn them.
COLOURS = {
    "kill": "#fdb863", "terminate": "#fdb863", "bounce-clean": "#f4a582", "bounce-hard": "#f4a582",
    "pause": "#b2abd2", "partition": "#92c5de", "disk-full": "#a6dba0", "log-dir-unwritable": "#a6dba0",
    **{f"toxic-{t}": "#c7eae5" for t in TOXIC_ATTRIBUTES},
    "protocol": "#fddbc7",
    **{f"controller-{m}": "#c2a5cf" for m in (*FAILOVER_METHODS, "add", "remove")},
    "zk-session-expiry": "#dfc27d", "zk-migration": "#dfc27d",
    "rolling-restart": "#e6f5d0", "rolling-restart-hard": "#e6f5d0", "rolling-upgrade": "#e6f5d0",
    "mm2-kill": "#bebada", "mm2-pause": "#bebada",
    "link-partition": "#bebada", "link-latency": "#bebada",
}


def test_every_kind_keeps_its_colour_and_exec_is_drawn_neutral():
    assert fault_colours() == COLOURS
    assert plots.fault_color("exec", fault_colours()) == plots.OTHER_FAULT


def _band_colours(colours) -> list:
    fig, ax = plt.subplots()
    plots._fault_bands(ax, [{"name": "kill", "start_us": 0, "end_us": 10**6},
                            {"name": "exec", "start_us": 0, "end_us": 10**6}], 0, colours)
    drawn = [p.get_facecolor() for p in ax.patches]
    plt.close(fig)
    return drawn


def test_the_plot_draws_the_colours_it_is_given_and_grey_without_them():
    assert _band_colours(fault_colours()) == [to_rgba("#fdb863", 0.45), to_rgba(plots.OTHER_FAULT, 0.45)]
    assert _band_colours(None) == [to_rgba(plots.OTHER_FAULT, 0.45)] * 2


# -- needs and the clusters that refuse a kind ------------------------------------------
ZK = ClusterSpec(mode="zookeeper", version="3.9")
COMBINED = ClusterSpec()
ISOLATED_DYNAMIC = ClusterSpec(mode="kraft-isolated", version="3.9", dynamic_quorum=True)
CLIENT_TOXIPROXY = ClusterSpec(toxiproxy="client")
ALL_TOXIPROXY = ClusterSpec(toxiproxy="client+replication")


@pytest.mark.parametrize("need,cluster,why", [
    (ZOOKEEPER_MODE, ZK, None),
    (ZOOKEEPER_MODE, COMBINED, "needs a ZooKeeper-mode cluster; this one is kraft-combined"),
    (KRAFT, COMBINED, None),
    (KRAFT, ZK, "needs a KRaft cluster; this one runs in ZooKeeper mode"),
    (TOXIPROXY, CLIENT_TOXIPROXY, None),
    (TOXIPROXY, COMBINED, "needs toxiproxy wiring; set cluster.toxiproxy: client (or client+replication)"),
    (TOXIPROXY_REPLICATION, ALL_TOXIPROXY, None),
    (TOXIPROXY_REPLICATION, CLIENT_TOXIPROXY,
     "acts on the replication listener; set cluster.toxiproxy: client+replication"),
    (REPLACEABLE, ZK, None),
    (DYNAMIC_QUORUM, ISOLATED_DYNAMIC, None),
    (DYNAMIC_QUORUM, ClusterSpec(mode="kraft-isolated", version="3.9"),
     "needs a dynamic KRaft quorum of isolated controllers; set cluster.mode: kraft-isolated and "
     "cluster.dynamic_quorum: true (Kafka 3.9+)"),
])
def test_a_need_says_whether_a_cluster_meets_it_and_why_not(need, cluster, why):
    assert need.why_not(cluster) == why


@pytest.mark.parametrize("kind", sorted(KINDS))
def test_every_kind_needs_only_known_needs(kind):
    assert KINDS[kind].needs <= NEEDS


def test_an_external_cluster_takes_exec_alone_and_a_secured_one_no_tool_kind():
    assert {k for k, fk in KINDS.items() if fk.on_external is None} == {"exec"}
    assert {fk.on_external for fk in KINDS.values()} == {None, ON_CONTAINERS}
    assert {k for k, fk in KINDS.items() if fk.on_secured is not None} == {
        "rolling-upgrade", "controller-add", "controller-remove", "zk-migration"}
    assert {fk.on_secured for fk in KINDS.values()} == {None, TOOLS_OVER_PLAINTEXT}


# -- a new kind is one object -------------------------------------------------------------
class NoteParams(Params):
    text: str = Field("hello", min_length=1)


class Note(BaseFault):
    """Touches nothing: writes its note into its rows."""
    name = "note"

    def __init__(self, text: str):
        super().__init__()
        self.text = text

    def _inject(self, ctx: FaultContext) -> None:
        self.detail = {"text": self.text}

    def _heal(self, ctx: FaultContext) -> None:
        pass


THREE_BROKERS = Need("three-brokers", lambda c: None if c.brokers >= 3 else
                     f"needs 3 brokers or more; this one has {c.brokers}")
NOTE = FaultKind(
    "note", "write a note into the history", NoteParams, NONE, lambda s, p: Note(p.text),
    needs={THREE_BROKERS},
    words=lambda name, nodes, detail: f"a note on {nodes_in_words(nodes)}: {detail.get('text')}",
    colour="#123456", on_external=None)


@pytest.fixture
def note_kind():
    register(NOTE)
    yield NOTE
    del KINDS[NOTE.name]


def _scenario(tmp_path, cluster: str, params: str = "{text: hi}") -> str:
    path = tmp_path / "note.yaml"
    path.write_text(f"{cluster}\ntopics: [{{name: t, partitions: 1, replication_factor: 1}}]\n"
                    "workload: {duration_s: 30, producers: [{topic: t, rate: 10}]}\n"
                    f"faults:\n  timeline:\n    - {{at: 5, fault: note, params: {params}}}\n")
    return str(path)


def test_a_new_kind_is_one_registered_object(tmp_path, note_kind):
    s = load_scenario(_scenario(tmp_path, "cluster: {mode: kraft-combined, version: '3.9', brokers: 3}"))
    fault = s.faults.timeline[0].resolved.build()
    assert isinstance(fault, Note) and fault.text == "hi"
    with EventLog(tmp_path, "r") as events:
        fault.inject(FaultContext(cluster=FakeCluster(tmp_path / "c", brokers=1), events=events))
    [row] = [r for r in read_table(tmp_path, "events").to_pylist() if r["kind"] == "fault"]
    assert (row["name"], json.loads(row["detail"])["description"]) == ("note", "a note on no node: hi")
    assert words_of("note")("note", ["kafka-1"], {"text": "x"}) == "a note on kafka-1: x"
    assert fault_colours()["note"] == "#123456"
    assert plots.fault_color("note", fault_colours()) == "#123456"


def test_a_new_kinds_need_and_params_are_refused_at_their_place(tmp_path, note_kind):
    with pytest.raises(SpecError) as e:
        load_scenario(_scenario(tmp_path, "cluster: {mode: kraft-combined, version: '3.9', brokers: 1}"))
    assert str(e.value).endswith("note.yaml:6 faults.timeline[0].fault: 'note' needs 3 brokers or more; "
                                 "this one has 1 (fix: change the cluster section or pick another fault)")
    with pytest.raises(SpecError) as e:
        load_scenario(_scenario(tmp_path, "cluster: {brokers: 3}", "{txt: hi}"))
    assert "faults.timeline[0].params.txt: note has no parameter 'txt'" in str(e.value)


def test_a_new_kind_that_allows_external_clusters_is_taken_by_one(tmp_path, note_kind):
    external = ("cluster:\n  external:\n    bootstrap_servers: localhost:1\n"
                "    nodes: {kafka-0: {id: 0}, kafka-1: {id: 1}, kafka-2: {id: 2}}")
    s = load_scenario(_scenario(tmp_path, external))
    assert s.faults.timeline[0].resolved.kind is NOTE
    del KINDS[NOTE.name]
    register(replace(NOTE, on_external=ON_CONTAINERS))
    with pytest.raises(SpecError, match=r"'note' acts on the containers of a cluster the harness started"):
        load_scenario(_scenario(tmp_path, external))
