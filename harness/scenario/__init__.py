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
    report:    {html, unavailability_threshold_s, min_load_fraction}

Each section is validated by the spec that owns its fields (one source of truth);
this module adds the defaults a run needs, the checks that span sections
(topics that exist, min ISR <= RF, a fault's needs against the cluster) and the
facts a verifier asks (`Scenario.facts`). Any error is a SpecError naming the
file, line and field (`scenarios/x.yaml:14 faults.timeline[2].target: …`).
"""
from __future__ import annotations

import difflib
from dataclasses import dataclass
from dataclasses import fields as dc_fields
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from clusters.spec import ClusterSpec
from core.errors import SpecError
from families.records.section import JavaConsumerSpec, JavaProducerSpec
from families.workload import Workload
from faults.schedule import ScheduleSpec
from harness.scenario import model as sm
from harness.scenario.build import TOP_LEVEL, Builder, build
from harness.scenario.model import Scenario
from harness.scenario.yamlsource import Source, apply_set, load_yaml
from verifiers.facts import model_facts
from workloads.spec import ConsumerGroupSpec, DrainSpec, ProducerSpec

BUILTIN_DIR = Path(__file__).parent.parent / "scenarios"


def parse_scenario(data: Any, source: Source) -> Scenario:
    if data is None:
        data = {}
    if not isinstance(data, dict):
        raise SpecError(source.where(()), "a scenario must be a mapping",
                        "start the file with keys such as cluster:, topics:, workload:")
    unknown = [k for k in data if k not in TOP_LEVEL]
    if unknown:
        close = difflib.get_close_matches(str(unknown[0]), TOP_LEVEL, n=1)
        hint = f"did you mean '{close[0]}'? " if close else ""
        raise SpecError(source.where((unknown[0],)), "unknown section",
                        f"{hint}use one of {', '.join(TOP_LEVEL)}")
    return build(Builder(data, source))


def known_fields() -> dict:
    """The tree of field names `--set` may use (None: free-form below)."""

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
            "topics": of_model(sm.TopicSpec), "workload": workload,
            "faults": {"timeline": of_model(sm.TimelineFault), "nemesis": nemesis,
                       "recovery_timeout_s": None},
            "drain": of_model(DrainSpec), "expect": None, "report": of_model(sm.Report),
            "applies_to": of_model(sm.AppliesTo)}


def read_source(path: Path) -> str:
    """A scenario file's text; a file that cannot be read is a SpecError naming it."""
    try:
        return path.read_text()
    except OSError as e:
        raise SpecError(str(path), f"cannot read it ({e.strerror})", "check the path") from None


def load_scenario(path_or_name: str | None = None, overrides: tuple[str, ...] = (),
                  seed: int | None = None) -> Scenario:
    """A scenario file, or a built-in name (`harness list`), with `--set` overrides."""
    return parse_scenario(*load_document(path_or_name, overrides, seed))


def load_document(path_or_name: str | None = None, overrides: tuple[str, ...] = (),
                  seed: int | None = None) -> tuple[Any, Source]:
    """The scenario document with `--set` overrides applied, not yet validated (for a
    caller that changes it first, as `--watch` drops the faults)."""
    path = resolve_path(path_or_name)
    data, source = load_yaml(read_source(path), _display(path))
    data = data if data is not None else {}
    if isinstance(data, dict):
        known = known_fields()
        for assignment in overrides:
            data = apply_set(data, assignment, known, source)
        if seed is not None:
            data = {**data, "seed": seed}
    return data, source


def _display(path: Path) -> str:
    try:
        return str(path.relative_to(Path.cwd()))
    except ValueError:
        return str(path)


@dataclass(frozen=True)
class Stored:
    """A stored run's scenario.yaml, read once: the document as stored (None: absent or
    not YAML), the model built from it (None: and why not), and what reading it found."""
    doc: dict | None
    model: Scenario | None
    problem: str | None
    notes: tuple[str, ...] = ()


def load_stored(path: Path) -> Stored:
    """A stored run's scenario.yaml (resolved: every default filled in) as the model, or
    None and why not (absent, not YAML, or not a valid scenario)."""
    try:
        data, source = load_yaml(path.read_text(), "scenario.yaml")
    except OSError:
        return Stored(None, None, "unknown: no scenario.yaml",
                      ("no scenario.yaml: the run's configuration is unknown",))
    except SpecError as e:
        return Stored(None, None, f"unknown: scenario.yaml is not a valid scenario ({e})",
                      (f"scenario.yaml is not valid YAML ({e}); ignored",))
    if not isinstance(data, dict):
        return Stored(None, None, "unknown: no scenario.yaml",
                      ("scenario.yaml is not a mapping; ignored",))
    model, problem = _stored_model(data, source)
    return Stored(data, model, problem)


def _stored_model(doc: Any, source: Source) -> tuple[Scenario | None, str | None]:
    if not isinstance(doc, dict):
        return None, "unknown: no scenario.yaml"
    try:
        return parse_scenario(doc, source), None
    except SpecError as e:
        return None, f"unknown: scenario.yaml is not a valid scenario ({e})"


def derive_facts(doc: Any) -> tuple[dict[str, bool | None], dict[str, str]]:
    """Facts of a stored scenario.yaml document and, per fact, where each came from."""
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
    close = difflib.get_close_matches(path_or_name, builtin_names(), n=1)
    hint = f"did you mean '{close[0]}'? " if close else ""
    raise SpecError(path_or_name, "no such scenario file or built-in scenario",
                    f"{hint}give a YAML file, or one of: {', '.join(builtin_names())}")


__all__ = ["Scenario", "Workload", "load_scenario", "parse_scenario", "builtin_names"]
