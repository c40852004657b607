"""A run's summary: what the pipeline found, typed; report/summary.json is its JSON
form (`to_json` / `from_json`), documented for users in docs/history.md.

Summaries written by earlier versions read back unchanged: every key this version
knows is a field; a key it does not know is kept in `extra` and written back as it was,
so a summary round-trips. The nested parts (metrics, timeline, verdict, config) are
the JSON documents they always were.
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field, fields
from typing import Any


@dataclass
class Summary:
    run_id: str | None = None
    counts: dict[str, int] = field(default_factory=dict)
    anomalies: dict[str, int] = field(default_factory=dict)     # kind -> count
    metrics: dict[str, Any] = field(default_factory=dict)
    config: dict[str, Any] = field(default_factory=dict)       # facts, their sources, threshold
    notes: list[str] = field(default_factory=list)
    verdict: dict[str, Any] = field(default_factory=dict)      # verifiers.verdict.Verdict.to_dict
    anomalies_by_fault: dict[str, dict[str, int]] = field(default_factory=dict)
    anomaly_explanations: dict[str, list[dict]] = field(default_factory=dict)
    poll_checks: dict[str, Any] = field(default_factory=dict)
    workload_deaths: list[dict] = field(default_factory=list)
    client_fatals: list[dict] = field(default_factory=list)
    problems: list[dict] = field(default_factory=list)          # what else went wrong
    load: dict[str, Any] = field(default_factory=dict)          # each workload against its plan
    timeline: dict[str, Any] = field(default_factory=dict)
    step_seconds: dict[str, float] = field(default_factory=dict)
    verify_seconds: float | None = None
    generated_at: str | None = None
    extra: dict[str, Any] = field(default_factory=dict)         # keys this version does not know

    # -- what readers ask --------------------------------------------------------------
    @property
    def status(self) -> str:
        return str(self.verdict.get("status", "unknown"))

    @property
    def failures(self) -> list[str]:
        return list(self.verdict.get("failures") or [])

    @property
    def max_unavailability_s(self) -> float:
        return float(self.metrics.get("max_unavailability_s") or 0.0)

    def count(self, name: str) -> int:
        return int(self.counts.get(name) or 0)

    # -- the JSON form ---------------------------------------------------------------
    def to_dict(self) -> dict[str, Any]:
        out = {f.name: getattr(self, f.name) for f in fields(self) if f.name != "extra"}
        return {**out, **self.extra}

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), indent=2, sort_keys=False, default=str) + "\n"

    @classmethod
    def from_dict(cls, doc: dict[str, Any]) -> "Summary":
        known = {f.name for f in fields(cls)} - {"extra"}
        return cls(**{k: v for k, v in doc.items() if k in known and v is not None},
                   extra={k: v for k, v in doc.items() if k not in known})

    @classmethod
    def from_json(cls, text: str) -> "Summary":
        doc = json.loads(text)
        if not isinstance(doc, dict):
            raise ValueError("summary.json is not a JSON object")
        return cls.from_dict(doc)

    # The JSON form's reading, for code written against summary.json (tests, scripts):
    # summary["counts"] is summary.counts.
    def __getitem__(self, key: str) -> Any:
        return self.to_dict()[key]

    def get(self, key: str, default: Any = None) -> Any:
        return self.to_dict().get(key, default)

    def __contains__(self, key: str) -> bool:
        return key in self.to_dict()
