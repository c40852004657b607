"""The Kafka Streams pipeline processor's Python side (workloads/java_streams.py): its
arguments (every flag StreamsProcessor.java reads), its jars and scratch space in the
container, its lines turned into the history the other processors write, and a Streams
version whose jars Maven cannot fetch refused naming the scenario's file, line and field."""
from __future__ import annotations

import json
import textwrap
from types import SimpleNamespace

import pandas as pd
import pytest

from core.errors import SpecError
from core.history import EventLog, HistoryWriter, read_table
from families.pipelines.clients import Pipeline
from families.pipelines.metrics import pipeline_metrics
from families.pipelines.section import pipeline
from harness.run import cluster as run_cluster
from harness.scenario import load_scenario
from workloads.java_pipeline import PIPELINE_PROGRAM, PipelineLineConverter
from workloads.java_streams import (
    STATE_DIR,
    STREAMS_LIBS,
    STREAMS_PROCESSOR,
    StreamsJarsMissing,
    StreamsProcessor,
    streams_args,
)
from workloads.pipeline_processor import ProcessorSettings
from workloads.records import pipeline_output_of

SETTINGS = ProcessorSettings(pipeline="pl0", group_id="pl0", input_topic="in", output_topic="out",
                             commit_interval_ms=250, output_size=80, transaction_timeout_ms=9000)


def test_streams_args_name_every_flag_of_streams_processor_java():
    args = streams_args(SETTINGS, "pl0i1.2", "streams")
    opts = dict(zip(args[::2], args[1::2]))
    assert opts["--name"] == "pl0i1.2" and opts["--group"] == "pl0"     # application.id
    assert (opts["--commit-interval-ms"], opts["--transaction-timeout-ms"]) == ("250", "9000")
    assert (opts["--streams-protocol"], opts["--state-dir"]) == ("streams", STATE_DIR)
    source = "".join(f.read_text() for f in STREAMS_PROCESSOR.sources)    # its own and the shared ones
    assert all(f'"{a[2:]}"' in source for a in args[::2])     # read by name there


def test_its_jars_follow_the_images_and_its_state_is_a_tmpfs():
    assert STREAMS_PROCESSOR.classpath.endswith(f":/opt/kafka/libs/*:{STREAMS_LIBS}/*")
    assert STREAMS_PROCESSOR.classpath.startswith(f"{STREAMS_PROCESSOR.class_dir}/StreamsProcessor.jar")
    assert dict(StreamsProcessor.tmpfs)[STATE_DIR].startswith("size=")


def test_an_output_names_its_writer_and_no_transaction():
    """StreamsProcessor.java writes "-" where the others write a transaction number."""
    assert 'outputValue(rid, count, "-")' in STREAMS_PROCESSOR.source.read_text()
    assert 'name + " "\n                + txn + " "' in PIPELINE_PROGRAM.read_text()
    assert pipeline_output_of(b"pipe p0-9 3 pl0i0.1 - xxxxxxxx") == ("p0-9", 3, "pl0i0.1", None)


def test_its_lines_become_the_history_the_other_processors_write(tmp_path):
    consumed = HistoryWriter(str(tmp_path), "consumed", "r", writer_name="c")
    commits = HistoryWriter(str(tmp_path), "commits", "r", writer_name="c")
    events = EventLog(str(tmp_path), "r", writer_name="e")
    conv = PipelineLineConverter(SETTINGS, "pl0i0", consumed, commits, events)
    for line in [
        '{"ev":"pipeline-start","ts":10,"pid":1,"processing":"exactly_once","client_version":"3.9.2",'
        '"transaction_version":0,"transactions":"v1","streams_protocol":"classic","application_id":"pl0"}',
        '{"ev":"pipeline-rebalance","ts":11,"type":"assigned","partitions":[0,2]}',
        '{"ev":"pipeline-restore","ts":12,"partitions":[2],"keys":null,"outputs":595,"seconds":0.101}',
        '{"ev":"recv","ts":13,"a":2,"ps":7,"recs":[[2,40,"k3","p0-9",null]]}',
        '{"ev":"pipeline-rebuild","ts":14,"error":"TaskCorruptedException","reason":"x","txn":null}',
        '{"ev":"pipeline-stats","ts":15,"begun":null,"committed":31,"aborted":null,"outputs":1,'
        '"restores":1}',
    ]:
        conv.feed(line)
    for w in (consumed, commits, events):
        w.close()
    rows = read_table(tmp_path, "consumed").to_pandas().to_dict("records")
    assert [(r["partition"], r["offset"], r["key"], r["record_id"], r["poll_seq"], r["assignment"])
            for r in rows] == [(2, 40, "k3", "p0-9", 7, 2)]
    assert pd.isna(rows[0]["leader_epoch"]) and rows[0]["group_id"] == "pl0"    # Streams has none
    ev = read_table(tmp_path, "events").to_pandas()
    assert conv.started["streams_protocol"] == "classic" and conv.fatal is None
    m = pipeline_metrics(ev.to_dict("records"))["pl0"]
    assert (m.rebalances, m.committed, m.begun, m.restores) == (1, 31, 0, 1), m
    rebuild = json.loads(ev[ev.name == "pipeline-rebuild"].detail.iloc[0])
    assert rebuild["txn"] is None and rebuild["error"] == "TaskCorruptedException"


def test_a_streams_pipeline_slot_runs_a_streams_processor(tmp_path):
    """Pipeline.start_instance picks the Streams handle; with no cluster its container cannot run:
    the instance is dead (exit 1), not hung, and says why."""
    events = EventLog(str(tmp_path), "r", writer_name="e")
    ctx = SimpleNamespace(dir=str(tmp_path), run_id="r", bootstrap="x:9092", seed=0, cluster=None,
                          client_config={}, events=events)
    spec = pipeline(0, {"input_topic": "in", "output_topic": "out", "client": "streams",
                        "commit_interval_ms": 300})
    p = Pipeline(spec, ctx, clients_version=None)
    p.start_instance("pl0i0", "pl0i0.1")
    w = p.workers["pl0i0.1"]
    assert isinstance(w, StreamsProcessor) and w.wait(30)
    assert "--commit-interval-ms" in w.args and "300" in w.args
    assert (w.exitcode, w.died, p.died()) == (1, True, ["pl0i0.1"])
    events.close()
    assert sorted(read_table(tmp_path, "events").to_pandas().name) == ["pipeline-instance-start",
                                                                      "workload-died"]


def test_jars_maven_cannot_fetch_are_refused_naming_file_line_and_field(tmp_path, monkeypatch):
    path = tmp_path / "s.yaml"
    path.write_text(textwrap.dedent("""\
        cluster: {mode: kraft-combined, version: "3.9", brokers: 3}
        topics:
          - {name: t, partitions: 3, replication_factor: 3}
          - {name: out, partitions: 3, replication_factor: 3}
        workload:
          duration_s: 30
          producers:
            - {name: p0, topic: t, keys: fixed}
          pipelines:
            - {input_topic: t, output_topic: out, client: streams}
        """))
    scenario = load_scenario(str(path), [], None)

    def no_jars(image, run_id):
        raise StreamsJarsMissing("3.9.2", "Could not find artifact org.apache.kafka:kafka-streams")
    monkeypatch.setattr(run_cluster, "prepared_streams", no_jars)
    with pytest.raises(SpecError) as e:
        run_cluster._streams_preparer(scenario)("img", "r")
    assert e.value.field == f"{scenario.source}:10 workload.pipelines[0].client", e.value.field
    assert "Kafka Streams 3.9.2's jars could not be fetched" in e.value.problem
    assert "Maven Central" in e.value.fix and "client: java" in e.value.fix
