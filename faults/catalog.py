"""Every kind of fault by name, each one object: a kind, a target selector and typed params.

    fault = make_fault("kill", {"leader_of": {"topic": "orders", "partition": 3}}, None,
                       where="faults[0]")

`KINDS` maps a kind name to a `FaultKind`, all there is to know of the kind: a
one-line summary, a pydantic params model (frozen, no unknown keys), whether it
takes a target, the fault it builds (its class does the inject and heal), what the
cluster must offer (`needs`, faults/needs.py), the names its faults carry in the
history, its words for the report, its plot colour, and why a cluster the harness did
not start, or a secured one, refuses it. A new kind is one `FaultKind` given to
`register`. `make_fault` and `validate_fault` turn bad input into `SpecError`s naming
the field (`<where>.fault`, `<where>.target…`, `<where>.params.<field>`) and what is
allowed; `validate_fault` builds nothing, so a scenario is checked before any
container exists.

`PRESETS` are the nemesis's named faults (`kill-leader`, `partition-halves` …):
a kind, a target and params with the topic and partition left open, filled in
by `preset(name, topic, partition)`. `catalog(topic, partition)` and
`fault_factory(topic, partition)` build them for a nemesis schedule.
"""
from __future__ import annotations

import difflib
import functools
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal, NamedTuple, get_args

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from clusters.kafka_requests import API_KEYS, ENCODABLE, ERROR_CODES
from clusters.upgrade_paths import UpgradeRefused, check_pair
from clusters.versions import resolve_version
from core.errors import SpecError
from faults import network, toxics
from faults.base import BaseFault, FaultContext, Words, name_and_targets
from faults.controller import METHODS as FAILOVER_METHODS
from faults.controller import ControllerFailover, controller_words
from faults.disk import DiskFull, UnwritableLogDir, disk_full_words, unwritable_words
from faults.exec import ExecParams, build_exec, check_templates
from faults.link import LinkLatency, LinkPartition, link_words
from faults.migration import ZkMigration, migration_words
from faults.needs import (
    DYNAMIC_QUORUM,
    PROTOCOL_PROXY,
    REPLACEABLE,
    TOXIPROXY,
    TOXIPROXY_REPLICATION,
    ZOOKEEPER_MODE,
    Need,
)
from faults.pause import DOCKER, SIGSTOP, Pause, paused_words
from faults.process import CLEAN, HARD, Bounce, Kill, bounced_words, stopped_words
from faults.protocol import ProtocolFault, protocol_words, proxy_action
from faults.quorum import ControllerAdd, ControllerRemove
from faults.rolling import RollingRestart, RollingUpgrade, restart_words, upgrade_words
from faults.selectors import (
    BARE_SELECTORS,
    Selector,
    all_brokers,
    all_nodes,
    parse_selector,
)
from faults.sidecar import KILL as PROCESS_KILL
from faults.sidecar import MIRROR_MAKER, ProcessFault, process_words
from faults.sidecar import PAUSE as PROCESS_PAUSE
from faults.toxics import toxic_words
from faults.zookeeper import ZkSessionExpiry, expiry_words

REQUIRED, OPTIONAL, NONE = "required", "optional", "none"


class Params(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class NoParams(Params):
    pass


class TerminateParams(Params):
    stop_timeout_s: float = Field(60, gt=0, description="seconds before docker stop SIGKILLs")


class BounceParams(Params):
    times: int = Field(2, ge=1, description="how many stop/start rounds")
    interval_s: float = Field(3, ge=0, description="seconds down, and up between rounds")
    reselect: bool = Field(True, description="pick the target again each round (follow the leader)")
    stop_timeout_s: float = Field(60, gt=0)


class LinkPartitionParams(Params):
    side: Literal["source", "target"] = Field(
        "source", description="the cluster MirrorMaker 2 can no longer reach")


class LinkLatencyParams(Params):
    latency_ms: int = Field(300, ge=1, le=60_000, description="added each way, per request "
                            "and per response, to MM2's traffic to the source")
    jitter_ms: int = Field(0, ge=0, le=60_000)


class PartitionParams(Params):
    shape: Literal["isolate", "halves", "ring", "bridge", "cut-clients"] = Field(
        "isolate", description="isolate: the target loses every other node; halves/ring/"
        "bridge: over the target pool (all nodes); cut-clients: the target brokers lose clients")


PARTITION_SHAPES: tuple[str, ...] = get_args(PartitionParams.model_fields["shape"].annotation)


class DiskParams(Params):
    log_dir: str | None = Field(None, description="the broker's log dir (default: the cluster's)")


class UnwritableParams(DiskParams):
    stop_timeout_s: float = Field(30, gt=0)


# Each toxic type's attributes (params fields) and their defaults.
TOXIC_ATTRIBUTES: dict[str, dict[str, int]] = {
    "latency": {"latency_ms": 1000, "jitter_ms": 0},
    "bandwidth": {"rate_kb_s": 100},
    "timeout": {"timeout_ms": 0},
    "reset_peer": {"timeout_ms": 0},
    "slow_close": {"delay_ms": 1000},
    "slicer": {"average_size": 64, "size_variation": 32, "delay_us": 1000},
}


class ToxicParams(Params):
    type: Literal["latency", "bandwidth", "timeout", "reset_peer", "slow_close", "slicer"]
    latency_ms: int | None = Field(None, ge=0)
    jitter_ms: int | None = Field(None, ge=0)
    rate_kb_s: int | None = Field(None, ge=0)
    timeout_ms: int | None = Field(None, ge=0)
    delay_ms: int | None = Field(None, ge=0)
    average_size: int | None = Field(None, ge=1)
    size_variation: int | None = Field(None, ge=0)
    delay_us: int | None = Field(None, ge=0)
    listeners: tuple[Literal["client", "replication"], ...] = Field(("client",), min_length=1)
    streams: tuple[Literal["downstream", "upstream"], ...] = Field(
        ("downstream", "upstream"), min_length=1)
    toxicity: float = Field(1.0, ge=0, le=1, description="share of connections affected")

    def attributes(self) -> dict[str, int]:
        """This type's attributes, defaults filled in."""
        return {k: d if getattr(self, k) is None else getattr(self, k)
                for k, d in TOXIC_ATTRIBUTES[self.type].items()}


class ControllerFailoverParams(Params):
    method: Literal["kill", "pause", "isolate"] = "kill"
    wait_for_new_s: float | None = Field(None, ge=0, description="default: settle timeout")


class ZkExpiryParams(Params):
    method: Literal["pause", "partition"] = "pause"
    session_timeout_ms: int = Field(18000, gt=0, description="the brokers' zookeeper.session.timeout.ms")
    margin_s: float = Field(3.0, ge=0)


class RollingRestartParams(Params):
    signal: Literal["clean", "hard"] = "clean"
    down_s: float = Field(0.0, ge=0, description="seconds each node stays down")
    isr_timeout_s: float = Field(120, gt=0, description="wait for full ISR after each node")
    stop_timeout_s: float = Field(60, gt=0)


class RollingUpgradeParams(Params):
    to_version: str = Field(description="a version alias or exact version from clusters/versions.py")
    release_version: str | None = Field(None, description="metadata version to raise to at the end")
    isr_timeout_s: float = Field(180, gt=0)
    rollback: bool = Field(False, description="roll the binaries back before the metadata "
                           "version is raised (where Kafka documents it)")

    @field_validator("to_version", "release_version", mode="before")
    @classmethod
    def _number_as_text(cls, value: Any) -> Any:
        # YAML reads `to_version: 4` or `3.9` as a number.
        return str(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else value


class ZkMigrationParams(Params):
    controllers: Literal[1, 3] = Field(1, description="KRaft controllers to provision "
                                       "(a quorum wants an odd size)")
    migration_timeout_s: float = Field(180, gt=0, description="wait for the metadata copy, "
                                       "and for the migration to be finalized")
    isr_timeout_s: float = Field(180, gt=0, description="wait for full ISR after each node")


class QuorumChangeParams(Params):
    timeout_s: float = Field(120, gt=0, description="wait for each quorum change")


class ControllerRemoveParams(QuorumChangeParams):
    which: Literal["follower", "leader"] = Field("follower", description="the voter removed")


# A kind's own checks beyond its params model: (target_spec, params, where, the
# cluster it meets: a clusters.spec.ClusterSpec, or None when not known).
Check = Callable[[Any, BaseModel, str, Any], None]


def _known_name(value: str, known: list[str], what: str, listing: str | None = None) -> str:
    if value in known:
        return value
    close = difflib.get_close_matches(str(value), known, n=1)
    hint = f"did you mean {close[0]!r}? " if close else ""
    raise ValueError(f"unknown {what} {value!r}; {hint}use {listing or 'one of ' + ', '.join(known)}")


class ProtocolParams(Params):
    api: tuple[str, ...] = Field(min_length=1, description="the API(s) whose requests it "
                                 "acts on, by Kafka's name: Produce, Fetch, EndTxn …")
    action: Literal["delay", "drop_response", "disconnect", "error"]
    direction: Literal["request", "response"] = Field(
        "request", description="delay: hold the request, or its response")
    when: Literal["before", "after"] = Field(
        "before", description="disconnect: instead of forwarding, or once the broker answered")
    delay_ms: int = Field(1000, ge=0, description="delay: how long")
    error: str = Field("NOT_LEADER_OR_FOLLOWER", description="error: the error code's name")
    probability: float | None = Field(None, ge=0, le=1, description="share of matching requests")
    count: int | None = Field(None, ge=1, description="act on at most this many requests")
    client_id_prefix: str | None = Field(None, min_length=1,
                                         description="only clients whose client.id starts so")

    @field_validator("api", mode="before")
    @classmethod
    def _api_names(cls, value: Any) -> Any:
        names = (value,) if isinstance(value, str) else tuple(value or ())
        return tuple(_known_name(n, sorted(API_KEYS), "API", "Kafka's name of the API (Produce, "
                                 "Fetch, EndTxn …: clusters/kafka_requests.API_NAMES)")
                     for n in names)

    @field_validator("error")
    @classmethod
    def _error_name(cls, value: str) -> str:
        return _known_name(value, sorted(ERROR_CODES), "error")


def _check_protocol(target_spec: Any, p: ProtocolParams, where: str, cluster: Any) -> None:
    if p.action != "error":
        return
    encodable = [name for name, key in API_KEYS.items() if key in ENCODABLE]
    for api in p.api:
        if API_KEYS[api] not in ENCODABLE:
            raise SpecError(f"{where}.params.api", f"cannot answer {api} with an error: the "
                            "proxy encodes error responses only for " + ", ".join(encodable),
                            "use one of those APIs, or another action (delay, drop_response, "
                            "disconnect)")


def _build_protocol(target: Selector | None, p: ProtocolParams) -> BaseFault:
    return ProtocolFault(target, p.api, proxy_action(p.action, p.direction, p.when),
                         delay_ms=p.delay_ms, error=p.error, probability=p.probability,
                         count=p.count, client_id_prefix=p.client_id_prefix)


class Refusal(NamedTuple):
    """Why a cluster cannot take a kind of fault, and what to do instead."""
    problem: str        # after the kind's name: "'kill' acts on the containers …"
    fix: str


# A cluster the harness did not start: the faults that act on our own containers.
ON_CONTAINERS = Refusal("acts on the containers of a cluster the harness started; this one is "
                        "external", "use fault: exec with your own commands (docs/external.md has "
                        "recipes)")
# A secured cluster of ours: the faults that run Kafka's tools inside a node.
TOOLS_OVER_PLAINTEXT = Refusal("runs Kafka's tools inside the nodes over PLAINTEXT, which a "
                               "secured cluster refuses",
                               "remove cluster.security for this scenario, or pick another fault")


@dataclass(frozen=True)
class FaultKind:
    """One kind of fault, whole: what a scenario may write of it, the fault it builds,
    what it needs of the cluster, and how the report tells and draws it."""
    name: str
    summary: str
    params: type[BaseModel]
    target: str                       # REQUIRED | OPTIONAL | NONE
    # The fault (its class does the inject and heal) for a target's selector and the params.
    build: Callable[[Selector | None, BaseModel], BaseFault]
    default_target: Any = None        # selector spec when optional and omitted; None: the fault's own
    needs: frozenset[Need] = frozenset()   # what every fault of this kind needs
    # Needs that depend on the params (a toxic on the replication listener).
    needs_for: Callable[[BaseModel], frozenset[Need]] | None = None
    self_healing: bool = False        # inject() heals by itself; a scenario's `hold` does not apply
    # Cross-field checks beyond the params model (target_spec, params, where, cluster).
    check: Check | None = None
    # The names its faults carry in the history (their rows' `name`); () : the kind's own.
    fault_names: tuple[str, ...] = ()
    words: Words = name_and_targets   # a fault of it in one clause, for the report
    colour: str | None = None         # its bands in the plots; None: the report's neutral grey
    # Why a cluster the harness did not start refuses it (None: it may be used there).
    on_external: Refusal | None = ON_CONTAINERS
    # Why a secured cluster of ours refuses it (None: it may be used there).
    on_secured: Refusal | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "needs", frozenset(self.needs))
        object.__setattr__(self, "fault_names", tuple(self.fault_names) or (self.name,))

    def fault(self, target: Selector | None, params: BaseModel) -> BaseFault:
        """A fresh fault of this kind, telling itself in this kind's words."""
        fault = self.build(target, params)
        fault.words = self.words
        if self.self_healing:
            fault.heal_after_s = 0.0      # inject() ends healed: nothing is left for heal-all
        return fault

    def needs_of(self, params: BaseModel) -> frozenset[Need]:
        return self.needs | (self.needs_for(params) if self.needs_for else frozenset())


def _build_partition(target: Selector | None, p: PartitionParams) -> BaseFault:
    if p.shape == "isolate":
        return network.Partition(network.isolate(target))
    if p.shape == "cut-clients":
        return network.Partition(network.cut_clients(target or all_brokers))
    shapes = {"halves": network.halves, "ring": network.ring, "bridge": network.bridge}
    return network.Partition(shapes[p.shape](target or all_nodes))


def _check_partition(target_spec: Any, p: PartitionParams, where: str, cluster: Any) -> None:
    if p.shape == "isolate" and target_spec is None:
        raise SpecError(f"{where}.target", "a partition of shape 'isolate' needs a target: the "
                        "nodes to cut off", "e.g. target: {leader_of: {topic: t, partition: 0}}")


_TOXICS: dict[str, Callable[[dict[str, int]], tuple[str, dict[str, Any]]]] = {
    "latency": lambda a: toxics.latency(a["latency_ms"], a["jitter_ms"]),
    "bandwidth": lambda a: toxics.bandwidth(a["rate_kb_s"]),
    "timeout": lambda a: toxics.timeout(a["timeout_ms"]),
    "reset_peer": lambda a: toxics.reset_peer(a["timeout_ms"]),
    "slow_close": lambda a: toxics.slow_close(a["delay_ms"]),
    "slicer": lambda a: toxics.slicer(a["average_size"], a["size_variation"], a["delay_us"]),
}
_LISTENERS = {"client": toxics.CLIENT, "replication": toxics.REPLICATION}


def _build_toxic(target: Selector | None, p: ToxicParams) -> BaseFault:
    proxies = toxics.proxies_of(target, [_LISTENERS[name] for name in p.listeners])
    return toxics.LinkToxic(_TOXICS[p.type](p.attributes()), proxies, streams=p.streams,
                            toxicity=p.toxicity)


def _check_toxic(target_spec: Any, p: ToxicParams, where: str, cluster: Any) -> None:
    own = TOXIC_ATTRIBUTES[p.type]
    for attr in sorted({a for attrs in TOXIC_ATTRIBUTES.values() for a in attrs} - set(own)):
        if getattr(p, attr) is not None:
            raise SpecError(f"{where}.params.{attr}", f"a {p.type} toxic has no attribute {attr}",
                            f"a {p.type} toxic takes {', '.join(own)}")


def _toxic_needs(p: ToxicParams) -> frozenset[Need]:
    return frozenset({TOXIPROXY_REPLICATION}) if "replication" in p.listeners else frozenset()


def _check_upgrade(target_spec: Any, p: RollingUpgradeParams, where: str, cluster: Any) -> None:
    """A version that exists; and, on a known cluster, a pair Kafka's upgrade notes
    support (refused before anything starts)."""
    try:
        to = resolve_version(p.to_version)
    except SpecError as e:
        raise SpecError(f"{where}.params.to_version", str(e).split(": ", 1)[1]) from None
    if cluster is None:
        return
    try:
        check_pair(cluster.kafka, to, cluster.mode, p.rollback)
    except UpgradeRefused as e:
        key = "rollback" if e.field == "--rollback" else "to_version"
        raise SpecError(f"{where}.params.{key}", e.problem, e.fix) from None


def _bounce(signal: str, target: Selector | None, p: BounceParams) -> BaseFault:
    return Bounce(target, signal, times=p.times, interval_s=p.interval_s, reselect=p.reselect,
                  stop_timeout_s=p.stop_timeout_s)


# Plot colours: kinds of one family share one (a kill and a terminate both stop a node).
STOPPED, BOUNCED, FROZEN, CUT, DISK = "#fdb863", "#f4a582", "#b2abd2", "#92c5de", "#a6dba0"
TOXIC, CONTROLLER, ZOOKEEPER_FAMILY, ROLLING = "#c7eae5", "#c2a5cf", "#dfc27d", "#e6f5d0"
PROTOCOL = "#fddbc7"
MIRROR = "#bebada"

KINDS: dict[str, FaultKind] = {k.name: k for k in (
    FaultKind("kill", "SIGKILL the target's container; heal starts it again", NoParams,
              REQUIRED, lambda s, p: Kill(s, HARD), words=stopped_words, colour=STOPPED),
    FaultKind("terminate", "clean shutdown (SIGTERM) of the target; heal starts it again",
              TerminateParams, REQUIRED,
              lambda s, p: Kill(s, CLEAN, stop_timeout_s=p.stop_timeout_s),
              words=stopped_words, colour=STOPPED),
    FaultKind("bounce", "clean stop and start of the target, `times` rounds, inside inject",
              BounceParams, REQUIRED, functools.partial(_bounce, CLEAN), self_healing=True,
              fault_names=("bounce-clean",), words=bounced_words, colour=BOUNCED),
    FaultKind("bounce-hard", "SIGKILL and start of the target, `times` rounds, inside inject",
              BounceParams, REQUIRED, functools.partial(_bounce, HARD), self_healing=True,
              words=bounced_words, colour=BOUNCED),
    FaultKind("pause", "freeze the target's container (docker pause); heal unpauses",
              NoParams, REQUIRED, lambda s, p: Pause(s, DOCKER), words=paused_words, colour=FROZEN),
    FaultKind("sigstop", "SIGSTOP the target's JVM (sockets stay open); heal sends SIGCONT",
              NoParams, REQUIRED, lambda s, p: Pause(s, SIGSTOP), fault_names=("pause",),
              words=paused_words, colour=FROZEN),
    FaultKind("partition", "silent network partition (iptables DROP) of the given shape",
              PartitionParams, OPTIONAL, _build_partition, check=_check_partition,
              words=network.partition_words, colour=CUT),
    FaultKind("disk-full", "fill the target broker's log dir until ENOSPC; heal frees it",
              DiskParams, REQUIRED, lambda s, p: DiskFull(s, p.log_dir), words=disk_full_words,
              colour=DISK),
    FaultKind("log-dir-unwritable", "make the target broker's log dir refuse writes",
              UnwritableParams, REQUIRED,
              lambda s, p: UnwritableLogDir(s, p.log_dir, stop_timeout_s=p.stop_timeout_s),
              words=unwritable_words, colour=DISK),
    FaultKind("toxic", "degrade the target brokers' links through toxiproxy (latency, "
              "bandwidth, timeout, reset_peer, slow_close, slicer)", ToxicParams, OPTIONAL,
              _build_toxic, default_target="all_brokers", needs={TOXIPROXY},
              needs_for=_toxic_needs, check=_check_toxic,
              fault_names=tuple(f"toxic-{t}" for t in TOXIC_ATTRIBUTES), words=toxic_words,
              colour=TOXIC),
    FaultKind("protocol", "act on one kind of Kafka request to the target brokers through the "
              "protocol proxy: delay it or its response, drop the response, disconnect, or "
              "answer with an error", ProtocolParams, OPTIONAL, _build_protocol,
              default_target="all_brokers", needs={PROTOCOL_PROXY}, check=_check_protocol,
              words=protocol_words, colour=PROTOCOL),
    FaultKind("controller-failover", "kill, pause or isolate the active controller and "
              "record its successor", ControllerFailoverParams, NONE,
              lambda s, p: ControllerFailover(p.method, wait_for_new_s=p.wait_for_new_s),
              fault_names=tuple(f"controller-{m}" for m in FAILOVER_METHODS),
              words=controller_words, colour=CONTROLLER),
    FaultKind("zk-session-expiry", "silence the target past its ZooKeeper session timeout",
              ZkExpiryParams, OPTIONAL, lambda s, p: ZkSessionExpiry(
                  s, p.method, session_timeout_ms=p.session_timeout_ms, margin_s=p.margin_s),
              default_target="random_broker", needs={ZOOKEEPER_MODE}, self_healing=True,
              words=expiry_words, colour=ZOOKEEPER_FAMILY),
    FaultKind("rolling-restart", "restart the target nodes one at a time, full ISR between",
              RollingRestartParams, OPTIONAL, lambda s, p: RollingRestart(
                  HARD if p.signal == "hard" else CLEAN, s, isr_timeout_s=p.isr_timeout_s,
                  down_s=p.down_s, stop_timeout_s=p.stop_timeout_s),
              default_target="all_brokers", self_healing=True,
              fault_names=("rolling-restart", "rolling-restart-hard"), words=restart_words,
              colour=ROLLING),
    FaultKind("rolling-upgrade", "re-create every node on another Kafka version, one at a "
              "time, then raise the metadata version", RollingUpgradeParams, NONE,
              lambda s, p: RollingUpgrade(p.to_version, release_version=p.release_version,
                                          isr_timeout_s=p.isr_timeout_s, rollback=p.rollback),
              needs={REPLACEABLE}, self_healing=True, check=_check_upgrade,
              words=upgrade_words, colour=ROLLING, on_secured=TOOLS_OVER_PLAINTEXT),
    FaultKind("controller-add", "add a KRaft controller to a dynamic quorum (KIP-853) under "
              "load; healed: removed again", QuorumChangeParams, NONE,
              lambda s, p: ControllerAdd(p.timeout_s), needs={DYNAMIC_QUORUM},
              words=controller_words, colour=CONTROLLER, on_secured=TOOLS_OVER_PLAINTEXT),
    FaultKind("controller-remove", "remove a voter from a dynamic KRaft quorum and shut it "
              "down; healed: started and added back", ControllerRemoveParams, NONE,
              lambda s, p: ControllerRemove(p.which, p.timeout_s), needs={DYNAMIC_QUORUM},
              words=controller_words, colour=CONTROLLER, on_secured=TOOLS_OVER_PLAINTEXT),
    FaultKind("zk-migration", "move a ZooKeeper-mode cluster to KRaft, Kafka's documented "
              "way: controllers in migration mode, brokers rolled twice, ZooKeeper retired",
              ZkMigrationParams, NONE, lambda s, p: ZkMigration(
                  p.controllers, migration_timeout_s=p.migration_timeout_s,
                  isr_timeout_s=p.isr_timeout_s),
              needs={ZOOKEEPER_MODE}, self_healing=True, words=migration_words,
              colour=ZOOKEEPER_FAMILY, on_secured=TOOLS_OVER_PLAINTEXT),
    # MirrorMaker 2 of a mirrored run (workload.mirror; the builder refuses them without)
    FaultKind("mm2-kill", "SIGKILL MirrorMaker 2 (workload.mirror); heal starts it again",
              NoParams, NONE, lambda s, p: ProcessFault(MIRROR_MAKER, PROCESS_KILL),
              words=process_words, colour=MIRROR),
    FaultKind("mm2-pause", "freeze MirrorMaker 2 (docker pause; workload.mirror); heal "
              "unpauses", NoParams, NONE, lambda s, p: ProcessFault(MIRROR_MAKER, PROCESS_PAUSE),
              words=process_words, colour=MIRROR),
    # the link between the clusters: MM2's traffic to one of them, nobody else's (faults/link.py)
    FaultKind("link-partition", "cut MirrorMaker 2 off from the source or the target cluster "
              "(iptables DROP in its network namespace; workload.mirror); heal removes the rules",
              LinkPartitionParams, NONE, lambda s, p: LinkPartition(p.side), words=link_words,
              colour=MIRROR),
    FaultKind("link-latency", "delay MirrorMaker 2's traffic to the source (a latency toxic on "
              "its own link proxy; workload.mirror.link_proxy); heal removes it",
              LinkLatencyParams, NONE, lambda s, p: LinkLatency(p.latency_ms, p.jitter_ms),
              words=link_words, colour=MIRROR),
    # The user's own commands reach any cluster: the one kind an external cluster allows.
    FaultKind("exec", "the user's own shell commands (inject, heal), templated per target node; "
              "any cluster, external ones too", ExecParams, OPTIONAL, build_exec,
              check=check_templates, on_external=None),
)}


def register(kind: FaultKind) -> FaultKind:
    """Make `kind` one a scenario may name; every use of a kind reads it from KINDS."""
    if kind.name in KINDS:
        raise ValueError(f"a fault kind named {kind.name!r} exists already")
    KINDS[kind.name] = kind
    return kind


def kind_of_fault(fault_name: str) -> FaultKind | None:
    """The kind whose faults carry `fault_name` in the history (None: no kind's)."""
    return next((k for k in KINDS.values() if fault_name in k.fault_names), None)


def words_of(fault_name: str) -> Words:
    """The words a fault named so is told in (its kind's; else its name and targets)."""
    kind = kind_of_fault(fault_name)
    return kind.words if kind is not None else name_and_targets


def fault_colours() -> dict[str, str]:
    """Each fault name in the history -> its kind's plot colour (for the report, which
    may not import faults/ and is given them; a name missing is drawn neutral)."""
    colours: dict[str, str] = {}
    for kind in KINDS.values():
        for name in kind.fault_names:
            if kind.colour is not None:
                colours.setdefault(name, kind.colour)
    return colours


# -- building and validating -----------------------------------------------------------
def kind_of(kind: Any, where: str) -> FaultKind:
    if isinstance(kind, str) and kind in KINDS:
        return KINDS[kind]
    close = difflib.get_close_matches(str(kind), list(KINDS), n=1)
    hint = f"did you mean {close[0]!r}? " if close else ""
    raise SpecError(f"{where}.fault", f"unknown fault kind {kind!r}",
                    f"{hint}use one of {', '.join(KINDS)}")


def _loc_path(loc: tuple) -> str:
    return "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in loc)


def _params_error(fk: FaultKind, err: ValidationError, where: str) -> SpecError:
    e = err.errors()[0]
    field = f"{where}.params{_loc_path(e['loc'])}"
    fields = ", ".join(fk.params.model_fields)
    if e["type"] == "extra_forbidden":
        return SpecError(field, f"{fk.name} has no parameter {e['loc'][-1]!r}",
                         f"use one of {fields}" if fields else f"{fk.name} takes no params")
    if e["type"] == "missing":
        return SpecError(field, f"is required for {fk.name}")
    if e["type"] == "literal_error":
        return SpecError(field, f"{e['input']!r} is not allowed",
                         f"use one of {e['ctx']['expected']}")
    return SpecError(field, f"{e['msg']}, got {e['input']!r}")


def parse_params(kind: str, params: dict | None, where: str) -> BaseModel:
    fk = kind_of(kind, where)
    if params is not None and not isinstance(params, dict):
        raise SpecError(f"{where}.params", f"must be a mapping, got {params!r}",
                        f"use keys of {', '.join(fk.params.model_fields) or 'none'}")
    try:
        return fk.params.model_validate(params or {})
    except ValidationError as e:
        raise _params_error(fk, e, where) from None


# The kinds whose selector may name another of the run's clusters (`cluster: target`):
# those acting on a node's container alone, wherever it runs.
ON_ANY_CLUSTER = frozenset({"kill", "terminate", "bounce", "bounce-hard", "pause", "sigstop"})
CLUSTERS = ("source", "target")          # a mirrored run's (families/mirror)
MIRROR_KINDS = frozenset({"mm2-kill", "mm2-pause", "link-partition", "link-latency"})
# a mirror whose MM2 reaches the source through its own proxy (workload.mirror.link_proxy)
LINK_PROXY_KINDS = frozenset({"link-latency"})


@dataclass(frozen=True)
class ResolvedFault:
    """A fault of a scenario as parsed once: its kind, its target's selector and its
    typed params; `build()` makes a fresh fault of it (one per injection). `cluster`:
    the run's cluster its selector names (`target`), None for the run's own."""
    kind: FaultKind
    selector: Selector | None
    params: BaseModel
    cluster: str | None = None

    def build(self) -> BaseFault:
        fault = self.kind.fault(self.selector, self.params)
        fault.cluster_name = self.cluster
        return fault

    @property
    def needs(self) -> frozenset[Need]:
        """What it needs from the cluster (faults/needs.py)."""
        return self.kind.needs_of(self.params)


def resolve_fault(kind: str, target_spec: Any, params: dict | None, where: str,
                  cluster: Any = None) -> ResolvedFault:
    """`kind` aimed at `target_spec` with `params`, checked (against `cluster`, the
    ClusterSpec it meets, when given) and parsed; SpecError naming the field if bad."""
    fk = kind_of(kind, where)
    model = parse_params(kind, params, where)
    target_spec, on = split_cluster(fk, target_spec, where)
    if fk.target == NONE and target_spec is not None:
        raise SpecError(f"{where}.target", f"{fk.name} takes no target", "remove the target")
    if fk.target == REQUIRED and target_spec is None:
        raise SpecError(f"{where}.target", f"{fk.name} needs a target",
                        "e.g. target: {leader_of: {topic: t, partition: 0}} or random_broker")
    spec = target_spec if target_spec is not None else fk.default_target
    selector = parse_selector(spec, f"{where}.target") if spec is not None else None
    if fk.check is not None:
        fk.check(target_spec, model, where, cluster)
    return ResolvedFault(fk, selector, model, on)


def split_cluster(fk: FaultKind, target_spec: Any, where: str) -> tuple[Any, str | None]:
    """(the selector without its `cluster` key, the cluster it names: None for the
    run's own, `source`); SpecError naming `<where>.target.cluster` if bad."""
    if not isinstance(target_spec, dict) or "cluster" not in target_spec:
        return target_spec, None
    rest = {k: v for k, v in target_spec.items() if k != "cluster"}
    name, field = target_spec["cluster"], f"{where}.target.cluster"
    if name not in CLUSTERS:
        raise SpecError(field, f"{name!r} is not a cluster of the run",
                        f"use one of {', '.join(CLUSTERS)}")
    if not rest:
        raise SpecError(f"{where}.target", "names a cluster but no nodes",
                        "add a selector beside it, e.g. {random_broker: {}, cluster: target} "
                        "or {leader_of: {topic: source.t, partition: 0}, cluster: target}")
    if name == "target" and fk.name not in ON_ANY_CLUSTER:
        raise SpecError(field, f"{fk.name} acts on the source cluster only",
                        f"use one of {', '.join(sorted(ON_ANY_CLUSTER))} on the target, "
                        "or cluster: source")
    spec: Any = rest                 # more than one key: parse_selector says what is wrong
    if len(rest) == 1:
        (key, args), = rest.items()
        if args in ({}, None) and key in BARE_SELECTORS:
            spec = key               # {random_broker: {}, cluster: target}
    return spec, (None if name == "source" else name)


def make_fault(kind: str, target_spec: Any, params: dict | None, where: str) -> BaseFault:
    """A fresh fault of `kind` aimed at `target_spec`; SpecError naming the field if bad."""
    return resolve_fault(kind, target_spec, params, where).build()


def validate_fault(kind: str, target_spec: Any, params: dict | None, where: str) -> None:
    """The checks of make_fault, with no fault built."""
    resolve_fault(kind, target_spec, params, where)


def fault_needs(kind: str, params: dict | None = None, where: str = "fault") -> frozenset[Need]:
    """What a fault of `kind` with these params needs from the cluster (faults/needs.py)."""
    return kind_of(kind, where).needs_of(parse_params(kind, params, where))


# -- nemesis presets -------------------------------------------------------------------
class Preset(NamedTuple):
    kind: str
    target: Any
    params: dict


TOPIC, PARTITION = "$topic", "$partition"      # filled in by preset()
_AT = {"topic": TOPIC, "partition": PARTITION}
LEADER = {"leader_of": _AT}
FOLLOWER = {"one_follower_of": _AT}

PRESETS: dict[str, Preset] = {
    "kill-leader": Preset("kill", LEADER, {}),
    "kill-follower": Preset("kill", FOLLOWER, {}),
    "kill-broker": Preset("kill", "random_broker", {}),
    "terminate-leader": Preset("terminate", LEADER, {}),
    "terminate-broker": Preset("terminate", "random_broker", {}),
    "bounce-leader": Preset("bounce", LEADER, {"times": 2, "interval_s": 3}),
    "bounce-leader-hard": Preset("bounce-hard", LEADER, {"times": 2, "interval_s": 3}),
    "controller-kill": Preset("controller-failover", None, {"method": "kill"}),
    "controller-pause": Preset("controller-failover", None, {"method": "pause"}),
    "controller-isolate": Preset("controller-failover", None, {"method": "isolate"}),
    "partition-isolate-broker": Preset("partition", "random_broker", {"shape": "isolate"}),
    "partition-halves": Preset("partition", None, {"shape": "halves"}),
    "partition-ring": Preset("partition", None, {"shape": "ring"}),
    "partition-bridge": Preset("partition", None, {"shape": "bridge"}),
    "partition-leader": Preset("partition", LEADER, {"shape": "isolate"}),
    "partition-follower": Preset("partition", FOLLOWER, {"shape": "isolate"}),
    "partition-clients": Preset("partition", None, {"shape": "cut-clients"}),
    "pause-leader": Preset("pause", LEADER, {}),
    "pause-follower": Preset("pause", FOLLOWER, {}),
    "sigstop-leader": Preset("sigstop", LEADER, {}),
    "pause-controller": Preset("pause", "active_controller", {}),
    "disk-full-leader": Preset("disk-full", LEADER, {}),
    "log-dir-unwritable-leader": Preset("log-dir-unwritable", LEADER, {}),
    "latency-leader": Preset("toxic", LEADER,
                             {"type": "latency", "latency_ms": 500, "jitter_ms": 100}),
    "bandwidth-leader": Preset("toxic", LEADER, {"type": "bandwidth", "rate_kb_s": 64}),
    "timeout-leader": Preset("toxic", LEADER, {"type": "timeout", "timeout_ms": 0}),
    "reset-peer-clients": Preset("toxic", "all_brokers", {"type": "reset_peer"}),
    "latency-replication": Preset("toxic", "all_brokers", {
        "type": "latency", "latency_ms": 300, "jitter_ms": 50, "listeners": ["replication"]}),
    "zk-session-expiry": Preset("zk-session-expiry", "random_broker", {"method": "pause"}),
    "rolling-restart": Preset("rolling-restart", None, {"signal": "clean"}),
    "rolling-restart-hard": Preset("rolling-restart", None, {"signal": "hard"}),
    "rolling-upgrade": Preset("rolling-upgrade", None, {"to_version": "4"}),
}


def _fill(value: Any, topic: str, partition: int) -> Any:
    if value == TOPIC:
        return topic
    if value == PARTITION:
        return partition
    if isinstance(value, dict):
        return {k: _fill(v, topic, partition) for k, v in value.items()}
    if isinstance(value, list):
        return [_fill(v, topic, partition) for v in value]
    return value


def preset_of(name: str, where: str = "nemesis.kinds") -> Preset:
    if name in PRESETS:
        return PRESETS[name]
    close = difflib.get_close_matches(str(name), list(PRESETS), n=1)
    hint = f"did you mean {close[0]!r}? " if close else ""
    raise SpecError(where, f"unknown fault kind {name!r}", f"{hint}use one of {', '.join(PRESETS)}")


def preset(name: str, topic: str, partition: int = 0) -> Preset:
    """The preset's kind, target and params aimed at `topic`-`partition` (fresh copies)."""
    p = preset_of(name)
    return Preset(p.kind, _fill(p.target, topic, partition), _fill(p.params, topic, partition))


def needs_of_preset(name: str) -> frozenset[Need]:
    p = preset_of(name)
    return fault_needs(p.kind, p.params, where=f"preset {name}")


def _build_preset(name: str, topic: str, partition: int) -> BaseFault:
    return make_fault(*preset(name, topic, partition), where=f"preset {name}")


def catalog(topic: str, partition: int = 0) -> dict[str, Callable[[], BaseFault]]:
    """Every preset as a factory of fresh faults aimed at `topic`-`partition`."""
    return {name: functools.partial(_build_preset, name, topic, partition) for name in PRESETS}


def fault_factory(topic: str, partition: int = 0) -> Callable[[str, FaultContext], BaseFault]:
    """`make_fault(kind, ctx)` for `run_schedule`: kinds are preset names."""
    def make(kind: str, ctx: FaultContext) -> BaseFault:
        preset_of(kind)
        return _build_preset(kind, topic, partition)
    return make
