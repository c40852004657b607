"""A scenario's expectations, as data.

An expectation is a comparison of one summary value with a number, optionally
conditional on a fact about the run (see verifiers.facts):

    lost == 0 when durable
    duplicate == 0 when idempotent
    max_unavailability_s <= 30
    ack_latency_ms.p99 < 500

YAML form (a file given with --expect, or an `expectations:` list inside
scenario.yaml):

    expectations:                 # strings as above, or mappings:
      - lost == 0 when durable
      - {metric: max_unavailability_s, op: "<=", value: 30}
    facts:                        # optional: override facts from scenario.yaml
      idempotent: true
    include_defaults: false       # optional: also check DEFAULTS (default false)

`workload_deaths == 0`, `fault_errors == 0` and `load_shortfall == 0` are always
checked, each unless an expectation names it itself (e.g. `workload_deaths <= 1`
where a scenario kills its own workload, `fault_errors <= 1` where one fault is
expected to fail): a run whose load stopped early, whose faults did not happen as
planned, or whose load never came proves nothing.

A bare list is accepted too. Metrics: every anomaly kind, every count
(sent, acked, failed, indeterminate, consumed, …; workload_deaths: workloads that
died on their own, e.g. a producer's fatal client error; client_fatals: fatal client
errors, whatever the policy that followed; fault_errors: faults that could not be
injected or healed as planned; load_shortfall: producing workloads that sent less
than report.min_load_fraction of their plan), max_unavailability_s,
max_recovery_s, and <ack|e2e>_latency_ms.<p50|p99|p999|max>. Per fault, from the
summary's `isr` and `fault_windows`: isr_shrinks (faults under which a touched
partition's ISR shrank), max_isr_restore_s (the longest wait after a heal for a
full ISR; ∞ when one never came back) and acked_during_faults (records sent on a
fault's touched partitions while it was wholly in effect, from the end of its
inject, and acknowledged before its heal);
max_consumer_stall_s: the longest run of seconds in which a group had records
waiting and received no new one (the summary's consumer_lag).
Conditions: a fact name, or `not <fact>`.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field, replace
from typing import Any

import yaml

from core.errors import SpecError
from families import COUNTS as FAMILY_COUNTS
from families import FAMILIES, NAMES
from verifiers.facts import FACTS

COUNTS = ("sent", "acked", "failed", "indeterminate", "consumed", "consumed_run",
          "consumed_drain", "consumed_foreign", "commits", "commits_ok",
          "aborted_seen_uncommitted", "acked_truncated", "workload_deaths", "client_fatals",
          "fault_errors", "load_shortfall")
DERIVED = ("max_unavailability_s", "max_recovery_s", "isr_shrinks", "max_isr_restore_s",
           "acked_during_faults", "max_consumer_stall_s")
LATENCIES = tuple(f"{m}.{p}" for m in ("ack_latency_ms", "e2e_latency_ms")
                  for p in ("p50", "p99", "p999", "max"))
METRICS = NAMES + COUNTS + FAMILY_COUNTS + DERIVED + LATENCIES
OPS = ("==", "!=", "<=", ">=", "<", ">")

_TEXT = re.compile(
    r"^\s*(?P<metric>[A-Za-z_][\w.]*)\s*(?P<op>==|!=|<=|>=|<|>)\s*"
    r"(?P<value>[-+]?\d+(?:\.\d+)?)\s*(?P<unit>ms|s)?\s*"
    r"(?:when\s+(?P<neg>not\s+)?(?P<fact>\w+))?\s*$")


@dataclass(frozen=True)
class Expectation:
    metric: str
    op: str
    value: float
    when: str | None = None       # fact name
    when_negated: bool = False

    def __post_init__(self):
        if self.metric not in METRICS:
            raise SpecError(f"expectation {self.metric!r}", "unknown metric",
                            f"use one of {', '.join(METRICS)}")
        if self.op not in OPS:
            raise SpecError(f"expectation {self.metric}", f"unknown operator {self.op!r}",
                            f"use one of {' '.join(OPS)}")
        if self.when is not None and self.when not in FACTS:
            raise SpecError(f"expectation {self.metric} … when {self.when}",
                            "unknown condition", f"use one of {', '.join(FACTS)}")

    @property
    def text(self) -> str:
        v = int(self.value) if float(self.value).is_integer() else self.value
        cond = f" when {'not ' if self.when_negated else ''}{self.when}" if self.when else ""
        return f"{self.metric} {self.op} {v}{cond}"

    def holds(self, actual: float) -> bool:
        v = self.value
        return {"==": actual == v, "!=": actual != v, "<=": actual <= v, ">=": actual >= v,
                "<": actual < v, ">": actual > v}[self.op]


def _unit_scale(metric: str, unit: str | None, where: str) -> float:
    if unit is None:
        return 1.0
    native = "ms" if metric.endswith("_ms") or "_ms." in metric else (
        "s" if metric.endswith("_s") else None)
    if native is None:
        raise SpecError(where, f"unit {unit!r} given for {metric}, which has no unit",
                        "drop the unit")
    return {("s", "s"): 1.0, ("ms", "ms"): 1.0, ("ms", "s"): 0.001,
            ("s", "ms"): 1000.0}[(unit, native)]


def parse_expectation(item: Any, where: str = "expectation") -> Expectation:
    if isinstance(item, str):
        m = _TEXT.match(item)
        if not m:
            raise SpecError(where, f"cannot parse {item!r}",
                            "write '<metric> <op> <number> [when [not] <fact>]', "
                            "e.g. 'lost == 0 when durable'")
        metric = m["metric"]
        value = float(m["value"]) * _unit_scale(metric, m["unit"], where)
        return Expectation(metric, m["op"], value, m["fact"], bool(m["neg"]))
    if isinstance(item, dict):
        unknown = set(item) - {"metric", "op", "value", "when"}
        if unknown or not {"metric", "op", "value"} <= set(item):
            raise SpecError(where, f"mapping keys {sorted(item)}",
                            "use metric, op, value and optionally when")
        when = item.get("when")
        neg = False
        if isinstance(when, str) and when.strip().startswith("not "):
            neg, when = True, when.strip()[4:].strip()
        try:
            value = float(item["value"])
        except (TypeError, ValueError):
            raise SpecError(f"{where}.value", f"{item['value']!r} is not a number") from None
        return Expectation(str(item["metric"]), str(item["op"]), value, when, neg)
    raise SpecError(where, f"{item!r} is neither a string nor a mapping",
                    "write e.g. 'lost == 0'")


# Every kind's own default (each family's kinds, families/), then the run's: a workload that
# died (a fatal client error, a crash) stopped its load early, a fault that could not
# be injected or healed did not happen as planned, a workload far below its plan sent
# load that never came; such a run proves nothing.
NO_DEATHS = parse_expectation("workload_deaths == 0", "defaults")
NO_FAULT_ERRORS = parse_expectation("fault_errors == 0", "defaults")
NO_SHORTFALL = parse_expectation("load_shortfall == 0", "defaults")
AS_PLANNED = (NO_DEATHS, NO_FAULT_ERRORS, NO_SHORTFALL)


def family_defaults(family) -> tuple[Expectation, ...]:
    """A family's default expectations: each kind's own, then the family's."""
    return tuple(parse_expectation(s, "defaults")
                 for s in (*(k.default for k in family.kinds if k.default), *family.defaults))


DEFAULTS: tuple[Expectation, ...] = (*(e for f in FAMILIES for e in family_defaults(f)),
                                     *AS_PLANNED)


@dataclass(frozen=True)
class ExpectationSet:
    expectations: tuple[Expectation, ...]
    facts: tuple[tuple[str, bool], ...] = ()    # overrides
    source: str = "defaults"
    # those that are there only as defaults (not also written by the scenario)
    from_defaults: frozenset[Expectation] = field(default_factory=frozenset)

    def for_families(self, names) -> "ExpectationSet":
        """Without the defaults of the families a run does not have: a run with no share
        group is not told that share_lost was 'not judged'. What a scenario writes stays,
        whichever family it names."""
        others = {e for f in FAMILIES if f.name not in names for e in family_defaults(f)}
        drop = self.from_defaults & others
        return replace(self, expectations=tuple(e for e in self.expectations if e not in drop))


def parse_document(doc: Any, source: str) -> ExpectationSet:
    if isinstance(doc, list):
        doc = {"expectations": doc}
    if not isinstance(doc, dict):
        raise SpecError(source, "expected a mapping with 'expectations:' or a list",
                        "see verifiers/expectations.py for the format")
    unknown = set(doc) - {"expectations", "facts", "include_defaults"}
    if unknown:
        raise SpecError(f"{source}: {', '.join(sorted(unknown))}", "unknown key",
                        "use expectations, facts, include_defaults")
    items = doc.get("expectations") or []
    if not isinstance(items, list):
        raise SpecError(f"{source}: expectations", "must be a list")
    exps = tuple(parse_expectation(it, f"{source}: expectations[{i}]")
                 for i, it in enumerate(items))
    only_defaults: frozenset[Expectation] = frozenset()
    if doc.get("include_defaults"):
        only_defaults = frozenset(DEFAULTS) - set(exps)
        exps = DEFAULTS + tuple(e for e in exps if e not in DEFAULTS)
    # A run that did not do what it planned never passes (a dead workload, a fault that
    # could not be injected or healed, load that never came). Judged whatever the
    # document chose, unless it names the count itself.
    exps = (*exps, *(d for d in AS_PLANNED if not any(e.metric == d.metric for e in exps)))
    facts = doc.get("facts") or {}
    if not isinstance(facts, dict):
        raise SpecError(f"{source}: facts", "must be a mapping of fact name to true/false")
    for k, v in facts.items():
        if k not in FACTS:
            raise SpecError(f"{source}: facts.{k}", "unknown fact", f"use one of {', '.join(FACTS)}")
        if not isinstance(v, bool):
            raise SpecError(f"{source}: facts.{k}", f"{v!r} is not true/false")
    return ExpectationSet(exps, tuple(sorted(facts.items())), source, only_defaults)


def load_expectations(text: str | None, source: str) -> ExpectationSet:
    if text is None:
        return ExpectationSet(DEFAULTS, from_defaults=frozenset(DEFAULTS))
    try:
        doc = yaml.safe_load(text)
    except yaml.YAMLError as e:
        raise SpecError(source, f"not valid YAML ({e})") from None
    return parse_document(doc, source)
