"""What a run directory holds beside its history: the resolved scenario.yaml, the
manifest (versions, host, start and end), and result.json. Written by the validate
phase and at the end of a run."""
from __future__ import annotations

import json
import os
import platform
from importlib.metadata import PackageNotFoundError, version
from typing import Any

from clusters.docker_env import docker_client
from core.errors import HarnessError
from core.history import now_us
from harness.run import Run, RunResult
from harness.run.external import for_run
from harness.run.phases import write_json


def validate(run: Run, detail: dict) -> None:
    """The Docker engine answers and we are root (not needed for an external cluster, whose
    scenario becomes the run's: its names under the run's prefix); scenario.yaml and
    manifest.json written."""
    run.scenario = for_run(run.scenario, run.ctx.run_id)
    engine = None
    if run.scenario.cluster.external is None:
        if os.geteuid() != 0:
            raise HarnessError("harness run needs root: log dirs are tmpfs mounts (fix: run as root)")
        engine = docker_client().version()
    ctx, s = run.ctx, run.scenario
    (ctx.run_dir / "scenario.yaml").write_text(s.to_yaml())
    write_manifest(run, engine)
    detail.update(scenario=s.name, source=s.source, seed=s.seed, run_dir=str(ctx.run_dir))


def write_manifest(run: Run, engine: dict | None = None, **end: Any) -> None:
    path = run.ctx.run_dir / "manifest.json"
    doc = json.loads(path.read_text()) if path.exists() else {}
    if not doc:
        def pkg(name: str) -> str | None:
            try:
                return version(name)
            except PackageNotFoundError:
                return None
        s = run.scenario
        doc = {"run_id": run.ctx.run_id, "scenario": s.name, "seed": run.ctx.seed,
               "kafka": s.cluster.kafka.version if s.cluster.external is None else
               f"external (declared {s.cluster.version})", "harness": pkg("kafka-harness"),
               "python": platform.python_version(), "spark": pkg("pyspark"),
               "confluent_kafka": pkg("confluent-kafka"),
               "docker": (engine or {}).get("Version"), "host": platform.node(),
               "cluster": s.cluster.to_dict(), "start_us": now_us(), "end_us": None}
    doc.update(end)
    write_json(path, doc)


def write_result(run: Run, result: RunResult) -> None:
    write_json(run.ctx.run_dir / "result.json",
               {"run_id": result.run_id, "status": result.status, "exit_code": result.exit_code,
                "reason": result.reason})
