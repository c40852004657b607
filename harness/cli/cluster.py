"""`harness cluster up | ls | down`: one of our clusters, left running between runs.

    harness cluster up my.yaml --set cluster.security=sasl_ssl [--json]
    harness cluster ls [--json]
    harness cluster down ID

`up` starts the scenario's cluster (a file with only a `cluster:` section is a spec) and
leaves it running: its containers carry today's labels (`harness.node` names each node)
and `harness.kept=true`, so `harness gc` leaves it and `harness gc --all` or `harness
cluster down ID` remove it. It prints the cluster's id, its bootstrap address and the
path of a client settings file (a Java-style client.properties: bootstrap, the CA,
the credentials; mode 600) that Kafka's tools take (--command-config) and an external
scenario takes (`client_config_file:`). `--json` prints {"id", "bootstrap_servers",
"client_config_file", "nodes"} instead (nodes: each node's id, role and container, for
exec faults that call docker).
"""
from __future__ import annotations

import argparse
import json
import os
import time
from pathlib import Path
from typing import TYPE_CHECKING

from clusters import storage
from clusters.labels import KEPT, RUN_ID, new_run_id
from core.errors import HarnessError
from harness.cli.flags import SET

if TYPE_CHECKING:
    from clusters.docker_cluster import DockerCluster

STATE = "cluster.json"
CLIENT_FILE = "client.properties"
# What a spec-only file (only `cluster:`) lacks to be a scenario; `up` uses only its cluster.
SPEC_ONLY_FILL = {"topics": [{"name": "t", "partitions": 1, "replication_factor": 1}],
                  "workload": {"producers": [{"topic": "t"}]}}


def add_parser(sub) -> argparse.ArgumentParser:
    c = sub.add_parser("cluster", help="start one of our clusters and leave it running (up, ls, down)")
    csub = c.add_subparsers(dest="cluster_command", required=True)
    up = csub.add_parser("up", help="start a scenario's cluster and leave it running",
                         parents=[SET])
    up.add_argument("scenario", nargs="?", default=None,
                    help="a scenario (or a file with only cluster:) or a built-in name; default: default")
    up.add_argument("--json", action="store_true", help="print one JSON object")
    up.set_defaults(func=up_command)
    ls = csub.add_parser("ls", help="the clusters left running")
    ls.add_argument("--json", action="store_true")
    ls.set_defaults(func=ls_command)
    down = csub.add_parser("down", help="remove a cluster left running")
    down.add_argument("id")
    down.set_defaults(func=down_command)
    return c


def _state_dir(cluster_id: str) -> Path:
    return storage.run_mount_dir(cluster_id)


def up_command(args: argparse.Namespace) -> int:
    from clusters.docker_cluster import DockerCluster
    from harness.cli.run import preflight
    scenario = load_cluster_scenario(args.scenario, tuple(args.overrides))
    if scenario.cluster.external is not None:
        raise HarnessError("harness cluster up starts one of our clusters; this scenario's is external")
    preflight()
    cluster = DockerCluster(scenario.cluster, run_id=new_run_id(), keep=True)
    if not args.json:
        print(f"harness cluster up: {scenario.cluster.mode} {scenario.cluster.kafka.version}, "
              f"{scenario.cluster.brokers} brokers, security {scenario.cluster.security}", flush=True)
    cluster.start()
    info = _write_state(cluster)
    if args.json:
        print(json.dumps(info))
    else:
        print(f"id: {info['id']}\nbootstrap: {info['bootstrap_servers']}\n"
              f"client settings: {info['client_config_file']}\n"
              f"remove it with: harness cluster down {info['id']}")
    return 0


def load_cluster_scenario(path_or_name: str | None, overrides: tuple[str, ...] = ()):
    """A scenario, or a spec: a file with only `cluster:` (and perhaps `name:`), whose
    cluster is validated as a scenario's is (the file, line and field named)."""
    from harness.scenario import known_fields, parse_scenario, read_source, resolve_path
    from harness.scenario.yamlsource import apply_set, load_yaml
    path = resolve_path(path_or_name)
    data, source = load_yaml(read_source(path), str(path))
    if isinstance(data, dict) and set(data) <= {"name", "cluster"}:
        data = {**data, **SPEC_ONLY_FILL}
    if isinstance(data, dict):
        known = known_fields()
        for assignment in overrides:
            data = apply_set(data, assignment, known, source)
    return parse_scenario(data, source)


def _write_state(cluster: "DockerCluster") -> dict:
    directory = _state_dir(cluster.run_id)
    bootstrap = cluster.bootstrap_servers()
    text = cluster.security.client_properties(bootstrap) if cluster.security is not None \
        else f"bootstrap.servers={bootstrap}\n"
    client_file = directory / CLIENT_FILE
    fd = os.open(client_file, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as fh:
        fh.write(text)
    nodes = {n.name: {"id": n.node_id, "role": n.role, "container": n.container_name}
             for n in cluster.nodes()}
    info = {"id": cluster.run_id, "bootstrap_servers": bootstrap,
            "client_config_file": str(client_file), "nodes": nodes}
    (directory / STATE).write_text(json.dumps({**info, "spec": cluster.spec.to_dict(),
                                               "created": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())},
                                              indent=2))
    return info


def kept_clusters() -> dict[str, list]:
    """id -> its containers, for every kept cluster."""
    from clusters.docker_env import docker_client
    found: dict[str, list] = {}
    for c in docker_client().containers.list(all=True, filters={"label": f"{KEPT}=true"}):
        found.setdefault(c.labels.get(RUN_ID, "?"), []).append(c)
    return found


def ls_command(args: argparse.Namespace) -> int:
    rows = []
    for cluster_id, containers in sorted(kept_clusters().items()):
        try:
            state = json.loads((_state_dir(cluster_id) / STATE).read_text())
        except (OSError, ValueError):
            state = {}
        spec = state.get("spec") or {}
        running = sum(1 for c in containers if c.status == "running")
        rows.append({"id": cluster_id, "mode": spec.get("mode"), "version": spec.get("version"),
                     "security": spec.get("security", "none"), "running": running,
                     "containers": len(containers), "bootstrap_servers": state.get("bootstrap_servers"),
                     "client_config_file": state.get("client_config_file"), "created": state.get("created")})
    if args.json:
        print(json.dumps(rows))
        return 0
    if not rows:
        print("no clusters left running (harness cluster up starts one)")
    for r in rows:
        print(f"{r['id']}  {r['mode']} {r['version']} security={r['security']}  "
              f"{r['running']}/{r['containers']} running  {r['bootstrap_servers']}  {r['created']}")
    return 0


def down_command(args: argparse.Namespace) -> int:
    clusters = kept_clusters()
    if args.id not in clusters and not (_state_dir(args.id) / STATE).exists():
        known = ", ".join(sorted(clusters)) or "none"
        raise HarnessError(f"no cluster {args.id!r} left running by harness cluster up "
                           f"(fix: give one of: {known}; `harness cluster ls` lists them)")
    from clusters.docker_cluster import remove_run
    errors = remove_run(args.id)
    if errors:
        raise HarnessError(f"cluster {args.id} not wholly removed: {'; '.join(errors)}")
    print(f"cluster {args.id} removed")
    return 0
