"""One short exactly-once pipeline run on a real 4.3 cluster: our producer writes keyed
inputs, two librdkafka processor instances count them per key and write one output per
input in transactions with their input offsets; one instance is killed mid-run and comes
back. Asserted from the history, not only the verdict: every acked input was written out
exactly once, each key's counts in the output log run 1, 2, 3 … with no gap or repeat,
the kill happened, and the instances rebuilt their counts from the output topic."""
from __future__ import annotations

import json

import pytest
import yaml
from pipeline_history import check_exactly_once_run  # same dir: pytest puts it on sys.path

from clusters.docker_env import docker_client

SCENARIO = {
    "name": "pipeline-ci", "seed": 36,
    "cluster": {"mode": "kraft-combined", "version": "4.3", "brokers": 3},
    "topics": [{"name": name, "partitions": 3, "replication_factor": 3,
                "configs": {"min.insync.replicas": 2}} for name in ("in", "out")],
    "workload": {"duration_s": 22,
                 "producers": [{"name": "p0", "topic": "in", "rate": 250, "keys": "fixed",
                                "key_count": 8}],
                 "pipelines": [{"name": "pl0", "input_topic": "in", "output_topic": "out",
                                "instances": 2, "processing": "exactly_once",
                                "records_per_txn": 50,
                                # one instance killed 9 s in, back 2 s later
                                "churn": {"how": "kill", "first_s": 9, "every_s": 300,
                                          "down_s": 2}}]},
}


@pytest.mark.timeout(600)
def test_an_exactly_once_pipeline_with_a_processor_killed_mid_run(chaos_run, tmp_path):
    path = tmp_path / "pipeline-ci.yaml"
    path.write_text(yaml.safe_dump(SCENARIO))
    result = chaos_run(str(path))
    run_dir = result.run_dir
    summary = json.loads((run_dir / "report" / "summary.json").read_text())
    check_exactly_once_run(run_dir, summary, min_acked=3000)
    assert result.status == "passed", summary["verdict"]
    assert not docker_client().containers.list(all=True, filters={
        "label": f"harness.run-id={run_dir.name}"})
