"""What a workload family is: one delivery path, owned end to end.

A family owns its scenario section (a typed model with its own rules and facts), its
client processes, the history tables they write, its checker (Spark queries over the
history that return rows per anomaly kind), its kinds, its metrics, and its words for
the report. The runner starts the families a scenario names; the judge composes
their checkers and runs their metrics (spark_reports/pipeline.py); the report shows
each family's section. Adding one is one package beside the others and one line in
families/__init__.py.

A kind is everything the harness says or does about one anomaly: the function that
finds its rows, how they are counted (the spec's counting rule), the rule and the
words the report prints, the expectation every run checks unless told otherwise,
whether a count above zero is bad news, and how the leadership plot marks it.
"""
from __future__ import annotations

from collections.abc import Callable
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from typing import Any, Protocol

from core.timeline import Timeline


@dataclass(frozen=True)
class Kind:
    name: str
    rows: Callable                      # Inputs -> DataFrame of its offending rows
    # how its written rows are counted: ("distinct", keys), ("sum", (column,)), ("rows", ())
    count_by: tuple[str, tuple[str, ...]]
    rule: str                           # the spec's definition, as the report shows it
    # "<n> {words}", with {tp} the topic-partition, {group} the consumer group and
    # {consumer} the consumer the rows are about ("a group", "a consumer" when unknown)
    words: str
    default: str | None = None          # the expectation every run checks by default
    bad: bool = True                    # a count above zero is an anomaly, not a cost
    mark: tuple[str, str] | None = None  # (colour, marker) on the leadership plot
    # one of its rows in words, for kinds judged per key: (row, run) -> sentence, where
    # run.at(us) says a time ("+31.2 s") and run.fault_name(fault_id) a fault; the
    # report says its first rows so (spark_reports/report_html.py)
    row_words: Callable[[dict, Any], str] | None = None


class SummaryKeys(Protocol):
    """A run's summary as a family's words and plots read it: by its summary.json keys
    (the report hands them spark_reports.summary.Summary, which answers so; a family
    sits below spark_reports and does not import it)."""

    def get(self, key: str, default: Any = None) -> Any: ...


def distinct(*keys: str) -> tuple[str, tuple[str, ...]]:
    return ("distinct", keys)


@dataclass(frozen=True)
class Family:
    """One delivery path. `section` is the scenario's typed workload section (a
    families.records.section.Workload); each callable reads only what it owns."""
    name: str
    title: str                                   # its heading in the report
    kinds: tuple[Kind, ...]
    # whether a scenario's workload section names this family (the runner starts, and
    # the judge checks, only those)
    named_by: Callable[[Any], bool]
    # its facts (name -> bool | None) from the section, and what each means
    facts: Callable[[Any], dict[str, bool | None]] = lambda section: {}
    fact_docs: dict[str, str] = field(default_factory=dict)
    # its clients, started side by side as one context manager: (ctx, section) -> cm;
    # None when its clients are another family's (a transactional producer is a
    # producer of the records family, in its transactional mode)
    start: Callable[[Any, Any], AbstractContextManager] | None = None
    # its clients start before every other family's: what the load's records go to
    # (a mirror's target cluster and MirrorMaker 2, ~20 s to start, which would
    # otherwise eat the producers' duration)
    before_load: bool = False
    # its section of the report in words: summary -> lines (none: nothing to add)
    words: Callable[[SummaryKeys], list[str]] = lambda summary: []
    # its metrics: RunData -> {"summary": {key: value}, "counts": {name: n},
    # "steps": {name: seconds}} (summary keys are its own; counts join the summary's
    # counts, where expectations find them; steps, what took how long, join
    # step_seconds as "metrics.<name>"); the pipeline runs every named family's in a
    # thread of their own, beside the anomaly kinds. None: it has none of its own
    metrics: Callable[["RunData"], dict] | None = None
    # the count names its metrics add, for expectations to name
    counts: tuple[str, ...] = ()
    # its default expectations beside its kinds' own: that a run exercised what its kinds
    # judge (a check that holds with nothing to hold for proves nothing)
    defaults: tuple[str, ...] = ()
    # its plots over time, drawn with the fault bands: summary -> [(title, ylabel,
    # per-second rows {"second": s, key: n …}, keys)]
    series: Callable[[SummaryKeys], list[tuple[str, str, list[dict], tuple[str, ...]]]] = (
        lambda summary: [])


@dataclass(frozen=True)
class RunData:
    """What a family's metrics read. On the driver: a history table's rows (`read`:
    table, columns -> list of dicts), the run's events (ts_us, kind, name, target,
    detail) and their parsed timeline (core/timeline.py: the fault windows and what the
    observer saw). In Spark: the session and the checkers' inputs (`checked`: the
    records family's checker.Inputs, with its views and every history table's frame),
    for metrics that scan the records. From validation: the history's topics and its
    produced (topic, partition)s. `threshold_s`: the unavailability threshold."""
    read: Callable[[str, tuple[str, ...]], list[dict]]
    events: list[dict]
    timeline: Timeline
    threshold_s: float
    spark: Any = None
    checked: Any = None
    topics: tuple[str, ...] = ()
    partitions: tuple[tuple[str, int], ...] = ()
