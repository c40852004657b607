"""How a workload's clients reach the run's cluster: its bootstrap address, and the
connection settings the cluster needs (RunContext.client_config: TLS and SASL for a
secured or external cluster), put under each workload's own client_config so that every
client process, the drain and the transactional consumer connect alike. A workload's
own setting of the same name wins.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, TypeVar

from clusters.client_config import CONNECTION_PREFIXES

if TYPE_CHECKING:
    from core.context import RunContext

S = TypeVar("S")


def connected(spec: S, run: "RunContext") -> S:
    """The spec with the cluster's connection settings in its client_config."""
    if not run.client_config:
        return spec
    return spec.model_copy(update={"client_config": {**run.client_config, **spec.client_config}})


def connection_only(client_config: dict) -> dict:
    """Of a client's settings, those that say how to connect (for another client of the
    same process: the transactional producer's consumer)."""
    return {k: v for k, v in client_config.items() if k.startswith(CONNECTION_PREFIXES)}
