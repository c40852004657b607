"""Broker log levels changed at run time (KIP-412 `broker-loggers`), so a run can keep
the evidence a maintainer asks for: `cluster.log_levels: {kafka.coordinator.transaction:
DEBUG}` logs every transaction coordinator decision (EndTxn in which state, epoch
bumps, markers) in logs/<broker>.log. Set on every broker once the cluster is up; a
restarted broker comes back with the image's levels (dynamic loggers are not stored).
A broker accepts only a logger that already exists in it (3.9.2 refuses the package
name above: "Invalid broker logger(s)"; a class's full name, once that class has logged,
is the likelier fit). A refusal does not stop the run: it is said on the terminal and
among the report's "what else went wrong".
"""
from __future__ import annotations

import shlex

JAVA = "java -Xmx128m -cp '/opt/kafka/libs/*'"
# ConfigCommand moved from core (Scala) to the tools module in 4.0
CONFIG_COMMANDS = ("org.apache.kafka.tools.ConfigCommand", "kafka.admin.ConfigCommand")


def set_broker_log_levels(cluster, levels: dict[str, str]) -> dict[str, str]:
    """Each broker's answer: "ok", or the tool's last words."""
    config = shlex.quote(",".join(f"{k}={v}" for k, v in levels.items()))
    out = {}
    for node in cluster.brokers():
        script = " || ".join(
            f"{JAVA} {tool} --bootstrap-server localhost:9092 --entity-type broker-loggers "
            f"--entity-name {node.node_id} --alter --add-config {config} 2>&1"
            for tool in CONFIG_COMMANDS)
        result = node.exec(["bash", "-c", script])
        out[node.name] = "ok" if result.exit_code == 0 else result.output[-300:]
    return out
