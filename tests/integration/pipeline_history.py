"""The pipeline integration tests' (librdkafka's, the Java clients' and Kafka Streams'
processors) scenario and run, and what they assert of a run's history: no pipeline kind,
every acked input drained once, each key's counts 1..n, one kill and one restart, a
count rebuilt on restore; of the Java processors' runs, their start lines and their own
deliveries; of every run, its verdict and that none of its containers is left."""
from __future__ import annotations

import json
from collections import defaultdict

import yaml

from clusters.docker_env import docker_client
from core.history import read_table


def pipeline_scenario(name: str, seed: int, *, duration_s: int, rate: int, churn_first_s: int,
                      faults: list | None = None, **pipeline) -> dict:
    """A 4.3 cluster of 3, topics `in` and `out` (3 partitions, RF 3, min ISR 2), our
    producer p0 writing `rate` keyed inputs/s (8 keys) to `in`, and the exactly-once
    pipeline pl0 of two instances, one of them killed `churn_first_s` after its first
    output was committed (the churn's clock) and back 2 s later; `pipeline`: its other fields; `faults`: the timeline."""
    return {
        "name": name, "seed": seed,
        "cluster": {"mode": "kraft-combined", "version": "4.3", "brokers": 3},
        "topics": [{"name": topic, "partitions": 3, "replication_factor": 3,
                    "configs": {"min.insync.replicas": 2}} for topic in ("in", "out")],
        "workload": {"duration_s": duration_s,
                     "producers": [{"name": "p0", "topic": "in", "rate": rate, "keys": "fixed",
                                    "key_count": 8}],
                     "pipelines": [{"name": "pl0", "input_topic": "in", "output_topic": "out",
                                    "instances": 2, "processing": "exactly_once", **pipeline,
                                    "churn": {"how": "kill", "first_s": churn_first_s,
                                              "every_s": 300, "down_s": 2}}]},
        **({"faults": {"timeline": faults}} if faults else {}),
    }


def kill_out_leader(at: int) -> dict:
    """The leader of an output partition killed for 4 s (transactions in flight to it)."""
    return {"at": at, "fault": "kill", "hold": 4,
            "target": {"leader_of": {"topic": "out", "partition": 1}}}


def run_scenario(chaos_run, tmp_path, scenario: dict):
    """The run of `scenario`: (its result, its run dir, its summary)."""
    path = tmp_path / f"{scenario['name']}.yaml"
    path.write_text(yaml.safe_dump(scenario))
    result = chaos_run(str(path))
    summary = json.loads((result.run_dir / "report" / "summary.json").read_text())
    return result, result.run_dir, summary


def check_passed_and_cleaned_up(result, summary: dict) -> None:
    assert result.status == "passed", summary["verdict"]
    assert not docker_client().containers.list(all=True, filters={
        "label": f"harness.run-id={result.run_dir.name}"})


def check_java_processors(run_dir, mine, acked) -> list[dict]:
    """Three instances (two, and one restarted) spoke transactions v2 with the cluster,
    and their own deliveries are in the history (phase run, their group); their start
    lines."""
    starts = [json.loads(d) for d in mine[mine.name == "pipeline-start"].detail]
    assert len(starts) == 3 and {s["transactions"] for s in starts} == {"v2"}, starts
    run_rows = read_table(run_dir, "consumed").to_pandas().query("phase == 'run'")
    assert set(run_rows.group_id) == {"pl0"} and len(run_rows) >= len(acked)
    return starts


def check_exactly_once_run(run_dir, summary: dict, min_acked: int):
    """The shared assertions; returns (acked record ids, the run's client events)."""
    a = summary["anomalies"]
    for kind in ("pipeline_lost", "pipeline_duplicate", "state_gap", "state_repeat", "lost"):
        assert a[kind] == 0, (kind, a)
    acked = set(read_table(run_dir, "produced").to_pandas().query("status == 'acked'").record_id)
    drained = read_table(run_dir, "consumed").to_pandas().query("phase == 'drain' and topic == 'out'")
    assert len(acked) > min_acked
    assert sorted(drained.source_record_id) == sorted(acked)          # each once, none missing
    counts = defaultdict(list)
    for row in drained.sort_values(["partition", "offset"]).itertuples():
        counts[row.key].append(row.key_count)
    assert all(c == list(range(1, len(c) + 1)) for c in counts.values()), counts
    m = summary["pipelines"]["pl0"]
    assert m["kills"] == 1 and m["restarts"] == 1, m
    # the killed instance had committed outputs: its tasks moved with state
    assert m["handovers"] == 1 and summary["counts"]["pipeline_handovers"] == 1, m
    events = read_table(run_dir, "events").to_pandas()
    mine = events[events.kind == "client"]
    clock = [json.loads(d) for d in mine[mine.name == "pipeline-churn-clock"].detail]
    assert len(clock) == 1 and clock[0]["victim"] == "pl0i0" and clock[0]["victim_had_output"], clock
    restores = mine[mine.name == "pipeline-restore"]
    assert any(json.loads(d)["outputs"] > 0 for d in restores.detail), "no count was rebuilt"
    return acked, mine
