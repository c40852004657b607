"""Broker log levels (`cluster.log_levels`), so a run can keep the evidence a maintainer
asks for: `{kafka.coordinator.transaction: DEBUG}` logs every transaction coordinator
decision (EndTxn in which state, epoch bumps, markers) in logs/<broker>.log.

They are set when each Kafka node starts, in its log4j configuration (the entrypoint
adds one logger per pair to log4j 1's and log4j 2's files; LOG_LEVELS carries them), not
at run time through KIP-412's `broker-loggers`: that path accepts only a logger that
already exists in the broker, so 3.9.2 and 4.3.1 both refused the package name above
("Invalid broker logger(s)"), and a restarted broker came back with the image's levels.
A logger in the configuration file needs no class to have logged first, a package's name
covers its classes, and a broker started again by a fault keeps it.

Share groups (KIP-932, 4.1+): SHARE_GROUP_LOGGERS below are the packages whose DEBUG lines
say what a share-partition leader did with each batch (`kafka.server.share`:
SharePartition, SharePartitionManager, DelayedShareFetch), what the share coordinator
persisted (`org.apache.kafka.coordinator.share`: ShareCoordinatorService and its shard),
and how the leader's writes to it went (`org.apache.kafka.server.share.persister`); the
same three packages exist in 4.1.2, 4.2.2 and 4.3.1 (their jars, read here). Write them
under `cluster.log_levels`, or merge the mapping in when building a spec.
"""
from __future__ import annotations

import re

from core.errors import SpecError

LEVELS = ("TRACE", "DEBUG", "INFO", "WARN", "ERROR", "OFF")
# a Java package or class name (log4j's logger names); no character the entrypoint splits on
_LOGGER = re.compile(r"[A-Za-z_$][\w$]*(\.[A-Za-z_$][\w$]*)*")

SHARE_GROUP_LOGGERS: dict[str, str] = {
    "kafka.server.share": "DEBUG",
    "org.apache.kafka.coordinator.share": "DEBUG",
    "org.apache.kafka.server.share.persister": "DEBUG",
}


def check_log_levels(levels: tuple[tuple[str, str], ...], field_name: str) -> None:
    for logger, level in levels:
        if not _LOGGER.fullmatch(logger):
            raise SpecError(f"{field_name}.{logger}", "not a logger name",
                            "name a Java package or class, e.g. kafka.coordinator.transaction")
        if level.upper() not in LEVELS:
            raise SpecError(f"{field_name}.{logger}", f"unknown level {level!r}",
                            f"use one of {', '.join(LEVELS)}")


def log_levels_env(levels: tuple[tuple[str, str], ...]) -> dict[str, str]:
    """The node's LOG_LEVELS variable (`logger=LEVEL,…`), read by its entrypoint."""
    if not levels:
        return {}
    return {"LOG_LEVELS": ",".join(f"{logger}={level.upper()}" for logger, level in levels)}
