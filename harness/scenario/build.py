"""Building a Scenario from a parsed document, section by section.

Each section's fields are checked by the spec that owns them; this module fills
in the defaults that depend on other sections (a producer's topic, its seed,
the drain's topics) and checks what spans sections. See harness/scenario/.
"""
from __future__ import annotations

import dataclasses
import difflib
import re
from collections.abc import Callable
from typing import Any

from pydantic import ValidationError

from clusters.migration import kraft_spec_of
from clusters.spec import ZOOKEEPER, ClusterSpec, validate_topic
from clusters.versions import CONSUMER_PROTOCOL, resolve_version
from core.errors import SpecError
from families.compacted.section import check_compacted, compacted, topic_configs
from families.mirror.section import check_mirror, mirror, target_topic
from families.pipelines.section import check_client, check_pipelines, pipeline
from families.records.section import JavaConsumerSpec, JavaProducerSpec
from families.shares.section import check_on_cluster, share_group
from families.workload import Workload
from faults.catalog import KINDS, LINK_PROXY_KINDS, MIRROR_KINDS, PRESETS, needs_of_preset, resolve_fault
from faults.needs import Need
from faults.schedule import ScheduleSpec
from faults.selectors import CLIENT_KINDS, selector_client_refs, selector_refs
from harness.scenario import external as scenario_external
from harness.scenario.model import (
    AppliesTo,
    Faults,
    Nemesis,
    Report,
    Scenario,
    TimelineFault,
    TopicSpec,
)
from harness.scenario.yamlsource import CONFIG_MAPS, Source
from verifiers.expectations import DEFAULTS, ExpectationSet, parse_document, parse_expectation
from workloads.spec import ConsumerGroupSpec, DrainSpec, ProducerSpec, idempotent_by_default

TOP_LEVEL = ("name", "description", "seed", "cluster", "topics", "workload", "faults",
             "drain", "expect", "report", "applies_to")
SECTION_PREFIXES = ("producer.transactions.", "producer.", "consumer.", "drain.", "cluster.",
                    "nemesis.", "topic.", "share_group.")


def relative_path(field: str) -> tuple[Any, ...]:
    """A spec's own field name ('producer.transactions.abort_rate', 'config.min.insync.replicas')
    as a path below its section ('transactions', 'abort_rate')."""
    for prefix in SECTION_PREFIXES:
        if field.startswith(prefix):
            field = ("transactions." if prefix == "producer.transactions." else "") + \
                field[len(prefix):]
            break
    parts: list[Any] = []
    pieces = field.split(".")
    for i, piece in enumerate(pieces):
        if parts and parts[-1] in CONFIG_MAPS:
            parts.append(".".join(pieces[i:]))
            break
        parts.append(int(piece) if piece.isdigit() else piece)
    return tuple(p for p in parts if p not in ("(spec)", ""))


class Builder:
    """Validates one document section by section, so every error has its place."""

    def __init__(self, data: dict, source: Source):
        self.data, self.source = data, source

    def fail(self, path: tuple, problem: str, fix: str | None = None):
        raise SpecError(self.source.where(path), problem, fix)

    def at(self, path: tuple, make: Callable[[], Any]) -> Any:
        """Run a spec's own validation; its SpecError is re-raised at `path` in the file."""
        try:
            return make()
        except SpecError as e:
            rel = relative_path(e.field) if e.field not in ("", None) else ()
            raise SpecError(self.source.where((*path, *rel)), e.problem, e.fix) from None
        except ValidationError as e:
            err = e.errors()[0]
            rel = tuple(err["loc"])
            fix = None
            if err["type"] == "extra_forbidden":
                fix = "remove it, or check its spelling"
            raise SpecError(self.source.where((*path, *rel)), err["msg"], fix) from None

    def get(self, path: tuple, default: Any, kind: type | tuple = dict) -> Any:
        node: Any = self.data
        for part in path:
            node = node.get(part) if isinstance(node, dict) else None
            if node is None:
                return default
        if not isinstance(node, kind):
            names = kind.__name__ if isinstance(kind, type) else " or ".join(k.__name__ for k in kind)
            self.fail(path, f"must be a {_KIND_WORDS.get(names, names)}, got {type(node).__name__}",
                      "see the scenario format in harness/scenario/")
        return node


_KIND_WORDS = {"dict": "mapping (key: value lines)", "list": "list (lines starting with '-')"}



def _props(values: Any) -> Any:
    """Kafka configs as strings (YAML reads `2` as an int and `true` as a bool)."""
    if not isinstance(values, dict):
        return values
    return {k: (str(v).lower() if isinstance(v, bool) else str(v)) for k, v in values.items()}


def build(b: Builder) -> Scenario:
    seed = b.get(("seed",), 0, int)
    cluster = _cluster(b)
    topics = _topics(b, cluster)
    workload = _workload(b, topics, seed)
    topics, workload = _compacted_topics(b, topics, workload)
    workload = _mirror(b, cluster, topics, workload)
    if workload.compacted and cluster.external is not None:
        b.fail(("workload", "compacted"), "compacted topics on an external cluster are not "
               "supported: the drain reads the log cleaner's checkpoint in each broker's log "
               "dir (docker exec)", "run them on a cluster the harness starts")
    _check_group_protocol(b, cluster, list(workload.consumers))
    workload = _check_share_groups(b, cluster, workload)
    _check_pipeline_clients(b, cluster, workload)
    cluster = _share_feature(b, cluster, workload)
    faults = _faults(b, cluster, topics, workload)
    scenario_external.check_fit(b, cluster, workload, faults)
    drain = _drain(b, topics, workload)
    expect = _expect(b)
    report = b.at(("report",), lambda: Report(**b.get(("report",), {})))
    applies_to = b.at(("applies_to",), lambda: AppliesTo(**{
        k: [str(x) for x in v] if isinstance(v, list) else v
        for k, v in b.get(("applies_to",), {}).items()}))
    return Scenario(name=str(b.get(("name",), "scenario", (str, int))),
                    description=str(b.get(("description",), "", str)), seed=seed,
                    cluster=cluster, topics=topics, workload=workload, faults=faults,
                    drain=drain, expect=expect, report=report, applies_to=applies_to,
                    source=b.source.name)


def _cluster(b: Builder) -> ClusterSpec:
    raw = dict(b.get(("cluster",), {}))
    if isinstance(raw.get("version"), (int, float)):
        raw["version"] = str(raw["version"])           # YAML reads 3.9 as a number
    for key in ("config",):
        if key in raw:
            raw[key] = _props(raw[key])
    if isinstance(raw.get("broker_config"), dict):
        raw["broker_config"] = {k: _props(v) for k, v in raw["broker_config"].items()}
    raw.setdefault("version", "3.9")
    return scenario_external.locate(b, b.at(("cluster",), lambda: ClusterSpec.from_dict(raw)))


def _topics(b: Builder, cluster: ClusterSpec) -> tuple[TopicSpec, ...]:
    items = b.get(("topics",), None, list)
    if items is None:
        items = [{"name": "t", "replication_factor": min(3, cluster.brokers)}]
    if not items:
        b.fail(("topics",), "is empty", "name at least one topic")
    topics, seen = [], set()
    for i, item in enumerate(items):
        path = ("topics", i)
        if not isinstance(item, dict):
            b.fail(path, "must be a mapping", "write - {name: t, partitions: 3, replication_factor: 3}")
        item = {**item, "configs": _props(item.get("configs") or {})}
        topic = b.at(path, lambda item=item: TopicSpec(**item))
        if topic.name in seen:
            b.fail((*path, "name"), f"topic {topic.name!r} is defined twice", "give each topic one entry")
        seen.add(topic.name)
        b.at(path, lambda t=topic: validate_topic(cluster, t.name, t.partitions,
                                                  t.replication_factor, t.configs))
        topics.append(topic)
    return tuple(topics)


def _check_topic(b: Builder, path: tuple, name: Any, topics: tuple[TopicSpec, ...]) -> None:
    names = [t.name for t in topics]
    if name not in names:
        b.fail(path, f"topic {name!r} is not among the scenario's topics",
               f"use one of {', '.join(names)}, or add it under topics:")


def _producer(b: Builder, i: int, raw: Any, topics, duration_s: float, seed: int) -> ProducerSpec:
    path = ("workload", "producers", i)
    if not isinstance(raw, dict):
        b.fail(path, "must be a mapping", "write - {topic: t, acks: all}")
    raw = {"name": f"p{i}", "topic": topics[0].name, "seed": seed + i, **raw}
    if "records" not in raw and "duration_s" not in raw:
        raw["duration_s"] = duration_s
    # Kafka's own client default (workloads.spec.idempotent_by_default); so too when
    # `--set producer.acks=1` meets a file's `enable_idempotence: true`: the user asked
    # for this scenario's producer with acks=1, which Kafka's client would not make
    # idempotent (both given by --set, the conflict is theirs: refused).
    default = idempotent_by_default(raw.get("acks", "all"))
    if "enable_idempotence" not in raw or (
            not default and b.source.overridden((*path, "acks"))
            and not b.source.overridden((*path, "enable_idempotence"))):
        raw["enable_idempotence"] = default
    raw["client_config"] = _props(raw.get("client_config") or {})
    spec = b.at(path, lambda: ProducerSpec(**raw))
    _check_topic(b, (*path, "topic"), spec.topic, topics)
    if spec.transactions is not None and spec.transactions.input_topic is not None:
        _check_topic(b, (*path, "transactions", "input_topic"), spec.transactions.input_topic, topics)
    return spec


def _consumer(b: Builder, i: int, raw: Any, topics) -> ConsumerGroupSpec:
    path = ("workload", "consumers", i)
    if not isinstance(raw, dict):
        b.fail(path, "must be a mapping", "write - {group_id: g0, topics: [t]}")
    raw = {"group_id": f"g{i}", "topics": [topics[0].name],
           "name_prefix": "c" if i == 0 else f"g{i}c", **raw}
    raw["client_config"] = _props(raw.get("client_config") or {})
    spec = b.at(path, lambda: ConsumerGroupSpec(**raw))
    for j, t in enumerate(spec.topics):
        _check_topic(b, (*path, "topics", j), t, topics)
    return spec


def _items(b: Builder, path: tuple) -> list:
    return b.get(path, [], list)


def _workload(b: Builder, topics, seed: int) -> Workload:
    duration = b.at(("workload",), lambda: Workload(**{
        k: v for k, v in b.get(("workload",), {}).items()
        if k in ("duration_s", "warmup_timeout_s", "end_after_faults_s")}))
    if duration.end_after_faults_s is not None and duration.end_after_faults_s >= duration.duration_s:
        b.fail(("workload", "end_after_faults_s"), f"{duration.end_after_faults_s:g} s is not "
               f"shorter than workload.duration_s ({duration.duration_s:g} s)",
               "shorten it, or remove it and let the load run duration_s")
    clients_version = _clients_version(b)
    producers = [_producer(b, i, raw, topics, duration.duration_s, seed)
                 for i, raw in enumerate(_items(b, ("workload", "producers")))]
    consumers = [_consumer(b, i, raw, topics)
                 for i, raw in enumerate(_items(b, ("workload", "consumers")))]
    java_p = [b.at(("workload", "java_producers", i), lambda raw=raw, i=i: JavaProducerSpec(
        **{"prefix": i, "topic": topics[0].name, **raw}))
        for i, raw in enumerate(_items(b, ("workload", "java_producers")))]
    java_c = [b.at(("workload", "java_consumers", i), lambda raw=raw, i=i: JavaConsumerSpec(
        **{"name": f"jc{i}", "topic": topics[0].name, "group_id": f"jg{i}", **raw}))
        for i, raw in enumerate(_items(b, ("workload", "java_consumers")))]
    shares = [b.at(("workload", "share_groups", i), lambda raw=raw, i=i: share_group(
        i, _share_raw(b, ("workload", "share_groups", i), raw), topics[0].name))
        for i, raw in enumerate(_items(b, ("workload", "share_groups")))]
    for i, g in enumerate(shares):
        for j, t in enumerate(g.topics):
            _check_topic(b, ("workload", "share_groups", i, "topics", j), t, topics)
    pipes = _pipelines(b, topics, producers)
    compact = [b.at(("workload", "compacted", i), lambda raw=raw, i=i: compacted(
        i, _mapping(b, ("workload", "compacted", i), raw, "- {topic: state, keys: 64, "
                    "tombstone_rate: 0.1}"), topics[0].name))
        for i, raw in enumerate(_items(b, ("workload", "compacted")))]
    drain_topics = b.get(("drain", "topics"), None, list)
    for i, field, problem, fix in check_compacted(compact, {t.name: t.partitions for t in topics},
                                                  producers, drain_topics):
        b.fail(("workload", "compacted", i, field), problem, fix)
    unknown = set(b.get(("workload",), {})) - set(Workload.model_fields)
    if unknown:
        b.fail(("workload", sorted(unknown)[0]), "unknown field",
               f"use one of {', '.join(Workload.model_fields)}")
    if not producers and not java_p:
        b.fail(("workload", "producers"), "no producer", "add one: producers: [{topic: t}]")
    _unique(b, ("workload", "producers"), [p.name for p in producers], "name")
    _no_restart_name_clash(b, producers)
    _unique(b, ("workload", "consumers"), [c.name_prefix for c in consumers], "name_prefix")
    _unique(b, ("workload", "java_producers"), [j.prefix for j in java_p], "prefix")
    for i, j in enumerate([*java_p, *java_c]):
        kind = "java_producers" if i < len(java_p) else "java_consumers"
        _check_topic(b, ("workload", kind, i if i < len(java_p) else i - len(java_p), "topic"),
                     j.topic, topics)
    return Workload(duration_s=duration.duration_s, warmup_timeout_s=duration.warmup_timeout_s,
                    end_after_faults_s=duration.end_after_faults_s, clients_version=clients_version,
                    producers=tuple(producers), consumers=tuple(consumers),
                    java_producers=tuple(java_p), java_consumers=tuple(java_c),
                    share_groups=tuple(shares), pipelines=tuple(pipes),
                    compacted=tuple(compact))


def _mirror(b: Builder, cluster: ClusterSpec, topics, workload: Workload) -> Workload:
    """workload.mirror checked against the source cluster, the topics and the producers
    (families/mirror/section.py), its defaults resolved."""
    raw = b.get(("workload", "mirror"), None)
    if raw is None:
        return workload
    path = ("workload", "mirror")
    spec = b.at(path, lambda: mirror(_mirror_raw(raw)))
    spec, refusals = check_mirror(spec, cluster, {t.name: t.partitions for t in topics},
                                  workload.producers)
    for rel, problem, fix in refusals:
        b.fail((*path, *rel), problem, fix)
    return workload.model_copy(update={"mirror": spec})


def _mirror_raw(raw: dict) -> dict:
    """YAML reads a version such as 3.9 as a number."""
    target = raw.get("target")
    if isinstance(target, dict) and isinstance(target.get("version"), int | float):
        return {**raw, "target": {**target, "version": str(target["version"])}}
    return raw


def _mapping(b: Builder, path: tuple, raw: Any, example: str) -> dict:
    if not isinstance(raw, dict):
        b.fail(path, "must be a mapping", f"write {example}")
    return raw


def _compacted_topics(b: Builder, topics, workload: Workload) -> tuple[tuple, Workload]:
    """Each compacted writer's topic with the cleaner's settings it lacks
    (families/compacted/section.py says why they are set, not required), and the
    writers with their topic's configs resolved."""
    out, items = list(topics), []
    for i, c in enumerate(workload.compacted):
        j = next(k for k, t in enumerate(out) if t.name == c.topic)
        configs, refusal = topic_configs(dict(out[j].configs), c)
        if refusal is not None:
            name, problem, fix = refusal
            b.fail(("topics", j, "configs", name), f"{problem} (compacted writer "
                   f"{c.name!r}, workload.compacted[{i}])", fix)
        out[j] = out[j].model_copy(update={"configs": configs})
        items.append(c.model_copy(update={"topic_configs": configs}))
    return tuple(out), workload.model_copy(update={"compacted": tuple(items)})


def _pipelines(b: Builder, topics, producers: list[ProducerSpec]) -> list:
    """workload.pipelines (families/pipelines/section.py): each item's own rules, then
    those across sections (its topics, the producer of its input)."""
    pipes = []
    for i, raw in enumerate(_items(b, ("workload", "pipelines"))):
        path = ("workload", "pipelines", i)
        if not isinstance(raw, dict):
            b.fail(path, "must be a mapping",
                   "write - {input_topic: in, output_topic: out, processing: exactly_once}")
        raw = {**raw, "client_config": _props(raw.get("client_config") or {})}
        pipes.append(b.at(path, lambda raw=raw, i=i: pipeline(i, raw)))
    for i, field, problem, fix in check_pipelines(pipes, {t.name: t.partitions for t in topics},
                                                  producers):
        b.fail(("workload", "pipelines", i, field), problem, fix)
    return pipes


def _share_raw(b: Builder, path: tuple, raw: Any) -> dict:
    if not isinstance(raw, dict):
        b.fail(path, "must be a mapping", "write - {group_id: q0, topics: [t], members: 3}")
    return {**raw, "configs": _props(raw.get("configs") or {}),
            "client_config": _props(raw.get("client_config") or {})}


def _share_feature(b: Builder, cluster: ClusterSpec, workload: Workload) -> ClusterSpec:
    """Share groups on 4.1 (a preview: share.version 0 by default) get share.version=1 at
    format; a scenario that switches them off is refused."""
    if not workload.share_groups:
        return cluster
    if cluster.share_version == 0:
        b.fail(("cluster", "share_version"), "share.version 0 switches share groups off, and the "
               "workload has share groups", "remove cluster.share_version")
    if cluster.external is not None:
        b.fail(("workload", "share_groups"), "share groups on an external cluster are not "
               "supported yet (the run would have to claim their group ids)",
               "run them on a cluster the harness starts")
    if not cluster.share_groups_enabled:
        return dataclasses.replace(cluster, share_version=1)
    return cluster


def _check_share_groups(b: Builder, cluster: ClusterSpec, workload: Workload) -> Workload:
    """Share groups against the cluster (families/shares/section.py) and the workload's
    names and topics; the groups with their lock and delivery limit resolved."""
    if not workload.share_groups:
        return workload
    groups = [b.at(("workload", "share_groups", i), lambda g=g: check_on_cluster(
        g, cluster.version, cluster.mode != ZOOKEEPER, dict(cluster.config),
        workload.clients_version)) for i, g in enumerate(workload.share_groups)]
    ids = [g.group_id for g in groups]
    _unique(b, ("workload", "share_groups"), ids, "group_id")
    _unique(b, ("workload", "share_groups"), [g.name_prefix for g in groups], "name_prefix")
    for i, g in enumerate(groups):
        if g.group_id in {c.group_id for c in workload.consumers}:
            b.fail(("workload", "share_groups", i, "group_id"),
                   f"{g.group_id!r} is also a consumer group's id (Kafka refuses one id for two "
                   "group types)", "give the share group another group_id")
    return workload.model_copy(update={"share_groups": tuple(groups)})


def _check_pipeline_clients(b: Builder, cluster: ClusterSpec, workload: Workload) -> None:
    """A pipeline's processor against the clients' version (families/pipelines/section.py)."""
    for i, p in enumerate(workload.pipelines):
        b.at(("workload", "pipelines", i), lambda p=p: check_client(
            p, workload.clients_version or cluster.kafka.version, cluster.kafka.version))


def _clients_version(b: Builder) -> str | None:
    """workload.clients_version, resolved to an exact version (exit 2 when unknown)."""
    raw = b.get(("workload", "clients_version"), None, (str, int, float))
    if raw is None:
        return None
    try:
        return resolve_version(str(raw)).version
    except SpecError as e:
        b.fail(("workload", "clients_version"), e.problem, e.fix)


def _check_group_protocol(b: Builder, cluster: ClusterSpec, consumers: list[ConsumerGroupSpec]) -> None:
    for i, c in enumerate(consumers):
        if c.group_protocol == "consumer" and not cluster.kafka.has(CONSUMER_PROTOCOL):
            b.fail(("workload", "consumers", i, "group_protocol"),
                   f"the consumer group protocol (KIP-848) is GA from Kafka 4.0; the cluster "
                   f"runs {cluster.kafka.version}", "use group_protocol: classic, or "
                   "cluster.version 4.0 or later")


def _no_restart_name_clash(b: Builder, producers: list[ProducerSpec]) -> None:
    """A restarted producer is named <name>.<n> (producer_churn.py): no other may be."""
    churned = [p.name for p in producers if p.churn is not None]
    for i, p in enumerate(producers):
        base = next((c for c in churned if re.fullmatch(rf"{re.escape(c)}\.\d+", p.name)), None)
        if base is not None:
            b.fail(("workload", "producers", i, "name"),
                   f"{p.name!r} is a name producer {base!r} takes when its churn restarts it",
                   "give it another name")


def _unique(b: Builder, path: tuple, values: list, field: str) -> None:
    for i, v in enumerate(values):
        if v in values[:i]:
            b.fail((*path, i, field), f"{v!r} is used twice", f"give each one its own {field}")


def _check_needs(b: Builder, path: tuple, needs: frozenset[Need], cluster: ClusterSpec,
                 what: str) -> None:
    """Each need (faults/needs.py) asked of the cluster; the first it lacks is refused at `path`."""
    for need in sorted(needs):
        why = need.why_not(cluster)
        if why is not None:
            b.fail(path, f"{what} {why}", "change the cluster section or pick another fault")


def _check_refs(b: Builder, path: tuple, refs, topics) -> None:
    by_name = {t.name: t for t in topics}
    for topic, partition in refs:
        _check_topic(b, path, topic, topics)
        if not 0 <= partition < by_name[topic].partitions:
            b.fail(path, f"{topic} has no partition {partition}",
                   f"use a partition from 0 to {by_name[topic].partitions - 1}")


def _timeline_entry(b: Builder, i: int, raw: Any, cluster, topics, duration_s: float):
    path = ("faults", "timeline", i)
    if not isinstance(raw, dict):
        b.fail(path, "must be a mapping", "write - {at: 10, fault: kill, target: random_broker, hold: 10}")
    entry = b.at(path, lambda: TimelineFault(**raw))
    if entry.fault not in KINDS:
        close = difflib.get_close_matches(entry.fault, list(KINDS), n=1)
        b.fail((*path, "fault"), f"unknown fault {entry.fault!r}",
               f"{'did you mean ' + repr(close[0]) + '? ' if close else ''}"
               f"use one of {', '.join(sorted(KINDS))}")
    resolved = resolve_fault(entry.fault, entry.target, entry.params, b.source.where(path),
                             cluster)
    entry = entry.model_copy(update={"resolved": resolved})
    _check_needs(b, (*path, "fault"), resolved.needs, cluster, f"{entry.fault!r}")
    if entry.target is not None:
        _check_refs(b, (*path, "target"), selector_refs(entry.target), topics)
    if not 0 <= entry.at < duration_s:
        b.fail((*path, "at"), f"{entry.at} s is outside the workload's {duration_s:g} s",
               f"use 0 <= at < {duration_s:g}, or raise workload.duration_s")
    if entry.hold is not None and entry.hold < 0:
        b.fail((*path, "hold"), "is negative", "use 0 or more seconds")
    return entry


def _nemesis(b: Builder, cluster, topics, duration_s: float) -> Nemesis | None:
    raw = b.get(("faults", "nemesis"), None)
    if raw is None:
        return None
    path = ("faults", "nemesis")
    raw = dict(raw)
    presets = raw.pop("presets", raw.pop("kinds", None))
    if not isinstance(presets, list) or not presets:
        b.fail((*path, "presets"), "is missing or empty", f"list fault presets: {', '.join(sorted(PRESETS))}")
    for j, name in enumerate(presets):
        if name not in PRESETS:
            b.fail((*path, "presets", j), f"unknown preset {name!r}", f"use one of {', '.join(sorted(PRESETS))}")
        _check_needs(b, (*path, "presets", j), needs_of_preset(name), cluster, f"{name!r}")
    topic = raw.pop("topic", topics[0].name)
    partition = raw.pop("partition", 0)
    _check_refs(b, (*path, "topic"), [(topic, partition)], topics)
    raw.setdefault("duration_s", duration_s)
    schedule = b.at(path, lambda: ScheduleSpec(kinds=tuple(presets), **raw))
    if schedule.duration_s > duration_s:
        b.fail((*path, "duration_s"), f"{schedule.duration_s:g} s is longer than the workload's "
               f"{duration_s:g} s", "shorten it or raise workload.duration_s")
    return Nemesis(presets=tuple(presets), topic=topic, partition=partition, schedule=schedule)


def _faults(b: Builder, cluster, topics, workload: Workload) -> Faults:
    raw = b.get(("faults",), {})
    unknown = set(raw) - set(Faults.model_fields)
    if unknown:
        b.fail(("faults", sorted(unknown)[0]), "unknown field",
               f"use one of {', '.join(Faults.model_fields)}")
    raws = _items(b, ("faults", "timeline"))
    migration = _migration(cluster, raws)
    timeline = tuple(_timeline_entry(b, i, entry, _cluster_met(cluster, migration, entry), topics,
                                     workload.duration_s) for i, entry in enumerate(raws))
    for i, entry in enumerate(timeline):
        _check_clients(b, ("faults", "timeline", i, "target"), entry.target, workload)
        _check_mirror_fault(b, ("faults", "timeline", i), entry, topics, workload)
    _check_link_outside_pauses(b, timeline)
    nemesis = _nemesis(b, cluster, topics, workload.duration_s)
    recovery = b.at(("faults",), lambda: Faults(
        **{k: v for k, v in raw.items() if k == "recovery_timeout_s"})).recovery_timeout_s
    if workload.end_after_faults_s is not None and not timeline and nemesis is None:
        b.fail(("workload", "end_after_faults_s"), "the scenario has no faults to end after",
               "remove it (the load runs workload.duration_s), or add faults")
    return Faults(timeline=timeline, nemesis=nemesis, recovery_timeout_s=recovery)


def _check_mirror_fault(b: Builder, path: tuple, entry, topics, workload: Workload) -> None:
    """A fault on MirrorMaker 2 or on the mirror's target cluster (a selector's
    `cluster: target`) needs workload.mirror; the topics a selector names on a cluster
    are that cluster's (the target's: the mirrored `source.<topic>`)."""
    on_target = entry.resolved is not None and entry.resolved.cluster == "target"
    if workload.mirror is None and (on_target or entry.fault in MIRROR_KINDS):
        b.fail((*path, "target", "cluster") if on_target else (*path, "fault"),
               f"{entry.fault} {'on the target cluster ' if on_target else ''}needs a mirrored "
               "run: this scenario has no workload.mirror",
               "add workload.mirror (MirrorMaker 2 to a second cluster), or remove this fault")
    if workload.mirror is not None and entry.fault in LINK_PROXY_KINDS \
            and not workload.mirror.link_proxy:
        b.fail((*path, "fault"), f"{entry.fault} delays MirrorMaker 2's traffic through its "
               "own link proxy, and this mirror has none (workload.mirror.link_proxy is false)",
               "set workload.mirror.link_proxy: true")
    if not (isinstance(entry.target, dict) and "cluster" in entry.target):
        return
    inner = {k: v for k, v in entry.target.items() if k != "cluster"}
    if on_target:
        topics = tuple(t.model_copy(update={"name": target_topic(t.name)})
                       for t in topics if t.name in workload.mirror.mirrored)
    _check_refs(b, (*path, "target"), selector_refs(inner), topics)


# an unpause takes a moment: a link fault this soon after a pause's heal met it still frozen
PAUSE_HEAL_SLACK_S = 2.0


def _check_link_outside_pauses(b: Builder, timeline) -> None:
    """A link-partition adds and removes its rules inside MirrorMaker 2's network namespace
    (docker exec), which docker refuses while an mm2-pause holds the container frozen (409,
    seen in CI): neither its cut nor its heal may fall inside a pause."""
    pauses = [(j, e.at, None if e.hold is None else e.at + e.hold + PAUSE_HEAL_SLACK_S)
              for j, e in enumerate(timeline) if e.fault == "mm2-pause"]
    for i, link in enumerate(timeline):
        if link.fault != "link-partition":
            continue
        moments = [("at", link.at)] + ([] if link.hold is None else [("hold", link.at + link.hold)])
        for j, start, end in pauses:
            for field, t in moments:
                if start <= t and (end is None or t <= end):
                    b.fail(("faults", "timeline", i, field),
                           f"the link-partition's {'cut' if field == 'at' else 'heal'} at {t:g} s "
                           f"falls in timeline[{j}]'s mm2-pause ({start:g} s to "
                           f"{'heal-all' if end is None else f'{end - PAUSE_HEAL_SLACK_S:g} s'}): "
                           "docker cannot change the rules inside a paused MirrorMaker 2",
                           "schedule the link fault outside the pause (its cut and heal at least "
                           f"{PAUSE_HEAL_SLACK_S:g} s after the pause's heal, or before the pause)")


def _check_clients(b: Builder, path: tuple, target: Any, workload: Workload) -> None:
    """A coordinator selector names a transactional producer, a consumer group or a
    share group of the workload (faults.selectors.selector_client_refs)."""
    # an exactly-once pipeline's instance slots (pl0i0 …) are transactional producers too
    names = {"transactional producer": [p.name for p in workload.producers if p.transactions is not None]
             + [slot for p in workload.pipelines if p.processing == "exactly_once"
                for slot in p.instance_names],
             "consumer group": [c.group_id for c in workload.consumers]
             + [p.group for p in workload.pipelines],
             "share group": [g.group_id for g in workload.share_groups]}
    for selector, key, name in selector_client_refs(target):
        what = CLIENT_KINDS[selector]
        if name not in names[what]:
            b.fail(path, f"{key} {name!r} is not a {what} of the workload",
                   f"use one of {', '.join(names[what]) or '(none: add one)'}")


def _migration(cluster: ClusterSpec, raws: list) -> tuple[float, ClusterSpec] | None:
    """A timeline's ZooKeeper → KRaft migration: when it starts, and the cluster it leaves."""
    for raw in raws:
        if cluster.mode == ZOOKEEPER and isinstance(raw, dict) and raw.get("fault") == "zk-migration" \
                and isinstance(raw.get("at"), (int, float)):
            controllers = (raw.get("params") or {}).get("controllers", 1)
            return float(raw["at"]), kraft_spec_of(cluster, controllers if controllers in (1, 3) else 1)
    return None


def _cluster_met(cluster: ClusterSpec, migration, raw: Any) -> ClusterSpec:
    """The cluster a timeline fault meets: after a migration has started, the KRaft one
    (a ZooKeeper fault is refused there, an upgrade to 4.x allowed)."""
    if migration is not None and isinstance(raw, dict) and isinstance(raw.get("at"), (int, float)) \
            and raw["at"] > migration[0]:
        return migration[1]
    return cluster


def _drain(b: Builder, topics, workload: Workload) -> DrainSpec:
    raw = dict(b.get(("drain",), {}))
    # a compacted topic is read by its own family once the cleaner has passed
    compacted_topics = {c.topic for c in workload.compacted}
    raw.setdefault("topics", [t.name for t in topics if t.name not in compacted_topics])
    transactional = any(p.transactions is not None for p in workload.producers)
    raw.setdefault("isolation", "read_committed" if transactional or workload.pipelines
                   else "read_uncommitted")
    spec = b.at(("drain",), lambda: DrainSpec(**raw))
    for j, t in enumerate(spec.topics):
        _check_topic(b, ("drain", "topics", j), t, topics)
    for p in workload.pipelines:
        for field in ("input_topic", "output_topic"):
            if getattr(p, field) not in spec.topics:
                b.fail(("drain", "topics"), f"leaves out pipeline {p.name}'s {field} "
                       f"{getattr(p, field)!r}: its checker reads the drained logs",
                       "add it, or leave drain.topics out (every topic)")
        if p.processing == "exactly_once" and spec.isolation != "read_committed":
            b.fail(("drain", "isolation"), f"read_uncommitted would count the outputs of "
                   f"pipeline {p.name}'s aborted transactions", "remove it (read_committed is "
                   "the default with pipelines)")
    return spec


def _expect(b: Builder) -> ExpectationSet:
    """`expect:` as a list, or {expectations, facts, include_defaults}; each item is
    parsed on its own so an error names its line."""
    raw = b.data.get("expect")
    if raw is None:
        return ExpectationSet(DEFAULTS, source="defaults", from_defaults=frozenset(DEFAULTS))
    doc = {"expectations": raw} if isinstance(raw, list) else raw
    base = ("expect",) if isinstance(raw, list) else ("expect", "expectations")
    if not isinstance(doc, dict) or not isinstance(doc.get("expectations", []), list):
        b.fail(("expect",), "must be a list of expectations or a mapping with expectations:",
               "write e.g. expect: ['lost == 0 when durable']")
    items = doc.get("expectations") or []
    for i, item in enumerate(items):
        try:
            parse_expectation(item, "expectation")
        except SpecError as e:
            raise SpecError(b.source.where((*base, i)), e.problem, e.fix) from None
    return b.at(("expect",), lambda: parse_document(doc, b.source.name))
