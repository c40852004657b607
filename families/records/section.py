"""The records family's scenario section: `workload:`, its producers (our verifiable
producer, transactional or not; Kafka's VerifiableProducer), its consumer groups
(ours; Kafka's VerifiableConsumer), and the facts a verifier asks of them.

The builder (harness/scenario/build.py) fills the defaults that depend on other
sections (a producer's topic, its seed) and checks what spans sections.
"""
from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, field_validator

from workloads.spec import idempotent_by_default


class _Model(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid", arbitrary_types_allowed=True)


class JavaProducerSpec(_Model):
    """Kafka's VerifiableProducer: records `j<prefix>-<n>`."""
    prefix: int = 0
    topic: str
    max_messages: int = 100_000
    acks: Literal["all", "-1", "1", "0"] = "all"
    throughput: int = -1
    config: dict[str, str] = {}

    @field_validator("acks", mode="before")
    @classmethod
    def _acks_text(cls, v: Any) -> Any:
        return str(v) if isinstance(v, int) else v     # YAML reads `acks: 1` as a number

    @property
    def acks_all(self) -> bool:
        return self.acks in ("all", "-1")

    @property
    def idempotent(self) -> bool:
        """As Kafka's client makes it: the default for its acks, unless its config says."""
        default = str(idempotent_by_default(self.acks)).lower()
        return self.acks_all and self.config.get("enable.idempotence", default) == "true"


class JavaConsumerSpec(_Model):
    name: str = "jc0"
    topic: str
    group_id: str
    isolation: str = "read_uncommitted"
    auto_commit: bool = False
    config: dict[str, str] = {}


# The facts a verifier asks of this section (verifiers/facts.py composes them).
FACT_DOCS = {
    "idempotent": "every producer is idempotent (transactional ones are)",
    "acks_all": "every producer sends with acks=all",
    "commit_after_processing": "every consumer group commits only what it recorded "
                               "(None when the scenario has no consumer group)",
}


def facts(w) -> dict[str, bool | None]:
    return {
        "idempotent": all([*(p.enable_idempotence for p in w.producers),
                           *(j.idempotent for j in w.java_producers)]),
        "acks_all": all([*(p.acks == "all" for p in w.producers),
                         *(j.acks_all for j in w.java_producers)]),
        "commit_after_processing": (all(c.commit == "after-processing" for c in w.consumers)
                                    if w.consumers else None),
    }
