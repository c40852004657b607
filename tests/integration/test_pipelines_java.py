"""One short exactly-once pipeline run on Kafka's Java clients (`client: java`, 4.3):
our producer writes keyed inputs, two Java processor instances (a container each) count
them per key and write one output per input in transactions with their input offsets;
an output partition's leader is killed, and one instance is killed and comes back.
Asserted from the history: every acked input was written out exactly once, each key's
counts in the output log run 1, 2, 3 … with no gap or repeat, the instances rebuilt
their counts from the output topic and said which transactions protocol they spoke."""
from __future__ import annotations

import json

import pytest
import yaml
from pipeline_history import check_exactly_once_run  # same dir: pytest puts it on sys.path

from clusters.docker_env import docker_client
from core.history import read_table

SCENARIO = {
    "name": "pipeline-java-ci", "seed": 37,
    "cluster": {"mode": "kraft-combined", "version": "4.3", "brokers": 3},
    "topics": [{"name": name, "partitions": 3, "replication_factor": 3,
                "configs": {"min.insync.replicas": 2}} for name in ("in", "out")],
    "workload": {"duration_s": 20,
                 "producers": [{"name": "p0", "topic": "in", "rate": 200, "keys": "fixed",
                                "key_count": 8}],
                 "pipelines": [{"name": "pl0", "input_topic": "in", "output_topic": "out",
                                "instances": 2, "processing": "exactly_once",
                                "client": "java", "records_per_txn": 50,
                                # one instance killed 11 s in, back 2 s later
                                "churn": {"how": "kill", "first_s": 11, "every_s": 300,
                                          "down_s": 2}}]},
    # the leader of an output partition killed (transactions in flight to it)
    "faults": {"timeline": [{"at": 5, "fault": "kill", "hold": 4,
                             "target": {"leader_of": {"topic": "out", "partition": 1}}}]},
}


@pytest.mark.timeout(600)
def test_an_exactly_once_java_pipeline_with_a_broker_and_a_processor_killed(chaos_run, tmp_path):
    path = tmp_path / "pipeline-java-ci.yaml"
    path.write_text(yaml.safe_dump(SCENARIO))
    result = chaos_run(str(path))
    run_dir = result.run_dir
    summary = json.loads((run_dir / "report" / "summary.json").read_text())
    acked, mine = check_exactly_once_run(run_dir, summary, min_acked=2000)
    starts = [json.loads(d) for d in mine[mine.name == "pipeline-start"].detail]
    assert len(starts) == 3 and {s["transactions"] for s in starts} == {"v2"}, starts
    assert {s["client_version"] for s in starts} == {"4.3.1"}, starts
    # the processors' own deliveries are in the history too (phase run, their group)
    run_rows = read_table(run_dir, "consumed").to_pandas().query("phase == 'run'")
    assert set(run_rows.group_id) == {"pl0"} and len(run_rows) >= len(acked)
    assert result.status == "passed", summary["verdict"]
    assert not docker_client().containers.list(all=True, filters={
        "label": f"harness.run-id={run_dir.name}"})
