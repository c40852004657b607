"""The scenario: one typed model of an experiment, loaded from YAML.

A scenario file has these sections (every one optional; defaults fill the rest):

    name, description, seed
    cluster:   clusters.spec.ClusterSpec's fields (mode, version, brokers, controllers,
               zookeepers, config, broker_config, toxiproxy, heap_mb, log_dir_size_mb)
    topics:    [{name, partitions, replication_factor, configs}]
    workload:  duration_s, warmup_timeout_s,
               producers: [workloads.spec.ProducerSpec], consumers: [ConsumerGroupSpec],
               java_producers / java_consumers: Kafka's Verifiable* clients
    faults:    timeline: [{at, fault, target, params, hold}]   (faults.catalog kinds)
               nemesis: {kinds, topic, partition, + faults.schedule.ScheduleSpec's fields}
               recovery_timeout_s
    drain:     workloads.spec.DrainSpec's fields (topics default to every topic)
    expect:    verifiers.expectations (a list, or {expectations, facts, include_defaults})
    report:    {html, unavailability_threshold_s}

Each section is validated by the spec that owns its fields (one source of truth);
this module adds the defaults a run needs, the checks that span sections
(topics that exist, min ISR <= RF, a fault's needs against the cluster) and the
facts a verifier asks (`Scenario.facts`). Any error is a SpecError naming the
file, line and field (`scenarios/x.yaml:14 faults.timeline[2].target: …`).
"""
from __future__ import annotations

from collections.abc import Callable
from functools import cached_property
from pathlib import Path
from typing import Any

import yaml
from pydantic import BaseModel, ConfigDict, InstanceOf, ValidationError

from clusters.spec import ZOOKEEPER, ClusterSpec, validate_topic
from core.errors import SpecError
from faults.schedule import ScheduleSpec
from harness.yamlsource import CONFIG_MAPS, Source, apply_set, load_yaml
from verifiers.expectations import ExpectationSet
from workloads.spec import ConsumerGroupSpec, DrainSpec, ProducerSpec

BUILTIN_DIR = Path(__file__).with_name("scenarios")
KAFKA_DEFAULT_MIN_ISR = 1


class _Model(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid", arbitrary_types_allowed=True)


class TopicSpec(_Model):
    name: str
    partitions: int = 3
    replication_factor: int = 3
    configs: dict[str, str] = {}


class JavaProducerSpec(_Model):
    """Kafka's VerifiableProducer: records `j<prefix>-<n>`."""
    prefix: int = 0
    topic: str
    max_messages: int = 100_000
    acks: str = "all"
    throughput: int = -1
    config: dict[str, str] = {}


class JavaConsumerSpec(_Model):
    name: str = "jc0"
    topic: str
    group_id: str
    isolation: str = "read_uncommitted"
    auto_commit: bool = False
    config: dict[str, str] = {}


class Workload(_Model):
    duration_s: float = 60.0
    warmup_timeout_s: float = 60.0          # until every partition has its first ack
    # Kafka's Java Verifiable clients run this version's jars (a line or exact version);
    # None: the brokers' version, as the cluster started.
    clients_version: str | None = None
    producers: tuple[ProducerSpec, ...] = ()
    consumers: tuple[ConsumerGroupSpec, ...] = ()
    java_producers: tuple[JavaProducerSpec, ...] = ()
    java_consumers: tuple[JavaConsumerSpec, ...] = ()


class TimelineFault(_Model):
    at: float                                # seconds after the faults phase starts
    fault: str                               # a faults.catalog kind
    target: Any = None                       # a selector spec (faults.selectors.parse_selector)
    params: dict[str, Any] = {}
    hold: float | None = None                # seconds until its heal; None: healed at heal-all


class Nemesis(_Model):
    presets: tuple[str, ...]                 # faults.catalog.PRESETS names
    topic: str
    partition: int = 0
    schedule: InstanceOf[ScheduleSpec]


class Faults(_Model):
    timeline: tuple[TimelineFault, ...] = ()
    nemesis: Nemesis | None = None
    recovery_timeout_s: float = 120.0        # full ISR again after heal-all


class AppliesTo(_Model):
    """Where a scenario makes sense, for a suite's --modes/--versions (empty: anywhere)."""
    modes: tuple[str, ...] = ()
    versions: tuple[str, ...] = ()


class Report(_Model):
    html: bool = True
    unavailability_threshold_s: float = 1.0


class Scenario(_Model):
    name: str = "scenario"
    description: str = ""
    seed: int = 0
    cluster: InstanceOf[ClusterSpec]
    topics: tuple[TopicSpec, ...]
    workload: Workload
    faults: Faults = Faults()
    drain: InstanceOf[DrainSpec]
    expect: InstanceOf[ExpectationSet]
    report: Report = Report()
    applies_to: AppliesTo = AppliesTo()
    source: str = "(built in code)"

    # -- facts a verifier asks (verifiers.facts) --------------------------------
    @cached_property
    def facts(self) -> dict[str, bool | None]:
        from verifiers.facts import facts_of
        return facts_of(self)

    @property
    def image_versions(self) -> tuple[str, ...]:
        """Every Kafka version the run's nodes run: the cluster's, and each rolling
        upgrade's target."""
        upgrades = [str(e.params["to_version"]) for e in self.faults.timeline
                    if e.fault == "rolling-upgrade" and "to_version" in e.params]
        return tuple(dict.fromkeys([self.cluster.version, *upgrades]))

    @property
    def written_partitions(self) -> tuple[tuple[str, int], ...]:
        """Every partition of a topic some producer writes to (the warm-up waits for each)."""
        w = self.workload
        written = {p.topic for p in w.producers} | {j.topic for j in w.java_producers}
        return tuple((t.name, i) for t in self.topics if t.name in written
                     for i in range(t.partitions))

    def min_isr(self, topic: TopicSpec) -> int:
        value = topic.configs.get("min.insync.replicas") or dict(self.cluster.config).get(
            "min.insync.replicas")
        return int(value) if value is not None else KAFKA_DEFAULT_MIN_ISR

    def unclean_elections(self, topic: TopicSpec) -> bool:
        value = topic.configs.get("unclean.leader.election.enable") or dict(
            self.cluster.config).get("unclean.leader.election.enable", "false")
        return str(value).lower() == "true"

    # -- the resolved document ------------------------------------------------------
    def to_dict(self) -> dict[str, Any]:
        dump = self.model_dump(mode="json", exclude={"cluster", "drain", "expect", "faults",
                                                     "workload", "source"})
        workload = self.workload.model_dump(mode="json")
        faults = self.faults.model_dump(mode="json", exclude={"nemesis"})
        if self.faults.nemesis is not None:
            n = self.faults.nemesis
            faults["nemesis"] = {"presets": list(n.presets), "topic": n.topic,
                                 "partition": n.partition, **_schedule_fields(n.schedule)}
        return {"name": dump["name"], "description": dump["description"],
                "seed": dump["seed"], "cluster": self.cluster.to_dict(),
                "topics": dump["topics"], "workload": workload, "faults": faults,
                "drain": self.drain.model_dump(mode="json"),
                "expect": {"expectations": [e.text for e in self.expect.expectations],
                           "facts": dict(self.expect.facts)},
                "report": dump["report"], "applies_to": dump["applies_to"]}

    def to_yaml(self) -> str:
        return yaml.safe_dump(self.to_dict(), sort_keys=False, default_flow_style=False)


def _schedule_fields(spec: ScheduleSpec) -> dict[str, Any]:
    from dataclasses import asdict
    return {k: v for k, v in asdict(spec).items() if k != "kinds"}


# -- building ---------------------------------------------------------------------
TOP_LEVEL = ("name", "description", "seed", "cluster", "topics", "workload", "faults",
             "drain", "expect", "report", "applies_to")
SECTION_PREFIXES = ("producer.transactions.", "producer.", "consumer.", "drain.", "cluster.",
                    "nemesis.", "topic.")


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
                      "see the scenario format in harness/scenario.py")
        return node


_KIND_WORDS = {"dict": "mapping (key: value lines)", "list": "list (lines starting with '-')"}


def parse_scenario(data: Any, source: Source) -> Scenario:
    from harness.scenario_build import build
    if data is None:
        data = {}
    if not isinstance(data, dict):
        raise SpecError(source.where(()), "a scenario must be a mapping",
                        "start the file with keys such as cluster:, topics:, workload:")
    unknown = [k for k in data if k not in TOP_LEVEL]
    if unknown:
        import difflib
        close = difflib.get_close_matches(str(unknown[0]), TOP_LEVEL, n=1)
        hint = f"did you mean '{close[0]}'? " if close else ""
        raise SpecError(source.where((unknown[0],)), "unknown section",
                        f"{hint}use one of {', '.join(TOP_LEVEL)}")
    return build(Builder(data, source))


def known_fields() -> dict:
    """The tree of field names `--set` may use (None: free-form below)."""
    from dataclasses import fields as dc_fields

    def of_model(model: type[BaseModel]) -> dict:
        return {name: None for name in model.model_fields}
    workload = {**of_model(Workload), "producers": of_model(ProducerSpec),
                "consumers": of_model(ConsumerGroupSpec),
                "java_producers": of_model(JavaProducerSpec),
                "java_consumers": of_model(JavaConsumerSpec)}
    workload["producers"]["transactions"] = None
    nemesis = {"presets": None, "topic": None, "partition": None,
               **{f.name: None for f in dc_fields(ScheduleSpec) if f.name != "kinds"}}
    return {"name": None, "description": None, "seed": None,
            "cluster": {f.name: None for f in dc_fields(ClusterSpec)},
            "topics": of_model(TopicSpec), "workload": workload,
            "faults": {"timeline": of_model(TimelineFault), "nemesis": nemesis,
                       "recovery_timeout_s": None},
            "drain": of_model(DrainSpec), "expect": None, "report": of_model(Report),
            "applies_to": of_model(AppliesTo)}


def load_scenario(path_or_name: str | None = None, overrides: tuple[str, ...] = (),
                  seed: int | None = None) -> Scenario:
    """A scenario file, or a built-in name (`harness list`), with `--set` overrides."""
    path = resolve_path(path_or_name)
    try:
        text = path.read_text()
    except OSError as e:
        raise SpecError(str(path), f"cannot read it ({e.strerror})", "check the path") from None
    data, source = load_yaml(text, _display(path))
    data = data if data is not None else {}
    if isinstance(data, dict):
        known = known_fields()
        for assignment in overrides:
            data = apply_set(data, assignment, known, source)
        if seed is not None:
            data = {**data, "seed": seed}
    return parse_scenario(data, source)


def _display(path: Path) -> str:
    try:
        return str(path.relative_to(Path.cwd()))
    except ValueError:
        return str(path)


def load_stored(path: Path) -> tuple[Scenario | None, str | None]:
    """A stored run's scenario.yaml (resolved: every default filled in) as the model, or
    None and why not (absent, not YAML, or not a valid scenario)."""
    try:
        data, source = load_yaml(path.read_text(), "scenario.yaml")
    except OSError:
        return None, "unknown: no scenario.yaml"
    except SpecError as e:
        return None, f"unknown: scenario.yaml is not a valid scenario ({e})"
    return _stored_model(data, source)


def _stored_model(doc: Any, source: Source) -> tuple[Scenario | None, str | None]:
    if not isinstance(doc, dict):
        return None, "unknown: no scenario.yaml"
    try:
        return parse_scenario(doc, source), None
    except SpecError as e:
        return None, f"unknown: scenario.yaml is not a valid scenario ({e})"


def derive_facts(doc: Any) -> tuple[dict[str, bool | None], dict[str, str]]:
    """Facts of a stored scenario.yaml document and, per fact, where each came from."""
    from verifiers.facts import model_facts
    return model_facts(*_stored_model(doc, Source("scenario.yaml")))


def builtin_names() -> list[str]:
    return sorted(p.stem for p in BUILTIN_DIR.glob("*.yaml"))


def resolve_path(path_or_name: str | None) -> Path:
    if path_or_name is None:
        return BUILTIN_DIR / "default.yaml"
    candidate = Path(path_or_name)
    if candidate.is_file():
        return candidate
    builtin = BUILTIN_DIR / f"{path_or_name}.yaml"
    if builtin.is_file():
        return builtin
    import difflib
    close = difflib.get_close_matches(path_or_name, builtin_names(), n=1)
    hint = f"did you mean '{close[0]}'? " if close else ""
    raise SpecError(path_or_name, "no such scenario file or built-in scenario",
                    f"{hint}give a YAML file, or one of: {', '.join(builtin_names())}")


__all__ = ["Scenario", "TopicSpec", "Workload", "TimelineFault", "Nemesis", "Faults", "Report",
           "load_scenario", "parse_scenario", "builtin_names", "ZOOKEEPER", "validate_topic"]
