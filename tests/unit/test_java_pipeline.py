"""The Java pipeline processor's Python side (workloads/java_pipeline.py): its arguments
(every flag PipelineProcessor.java reads), its settings file, and its stdout lines
turned into the same history the librdkafka processor writes."""
from __future__ import annotations

import json
from types import SimpleNamespace

from core.history import EventLog, HistoryWriter, read_table
from families.pipelines.clients import Pipeline
from families.pipelines.section import pipeline
from workloads.java_pipeline import (
    PIPELINE_PROCESSOR,
    JavaProcessor,
    PipelineLineConverter,
    processor_args,
    processor_config,
)
from workloads.pipeline_processor import ProcessorSettings

SETTINGS = ProcessorSettings(pipeline="pl0", group_id="g-pl0", input_topic="in", output_topic="out",
                             transactional_id="r-pl0i1", records_per_txn=50, output_size=80,
                             restore_timeout_s=61.5, client_config={"linger.ms": "7"})


def test_processor_args_name_every_flag_of_pipeline_processor_java():
    args = processor_args(SETTINGS, "pl0i1.2")
    opts = dict(zip(args[::2], args[1::2]))
    assert opts["--name"] == "pl0i1.2" and opts["--transactional-id"] == "r-pl0i1"
    assert (opts["--keyed"], opts["--records-per-txn"], opts["--restore-timeout-ms"]) == ("1", "50", "61500")
    assert opts["--processing"] == "exactly_once" and opts["--group"] == "g-pl0"
    source = "".join(f.read_text() for f in PIPELINE_PROCESSOR.sources)    # its own and the shared ones
    assert all(f'"{a[2:]}"' in source for a in args[::2])     # read by name there
    assert processor_config(SETTINGS, "10.0.0.2:9092") == {"bootstrap.servers": "10.0.0.2:9092",
                                                           "linger.ms": "7"}


def _converted(tmp_path, lines: list[str]) -> tuple:
    consumed = HistoryWriter(str(tmp_path), "consumed", "r", writer_name="c")
    commits = HistoryWriter(str(tmp_path), "commits", "r", writer_name="c")
    events = EventLog(str(tmp_path), "r", writer_name="e")
    conv = PipelineLineConverter(SETTINGS, "pl0i1", consumed, commits, events)
    for line in lines:
        conv.feed(line)
    for w in (consumed, commits, events):
        w.close()
    return (conv, read_table(tmp_path, "consumed").to_pandas(),
            read_table(tmp_path, "commits").to_pandas(), read_table(tmp_path, "events").to_pandas())


def test_its_lines_become_the_history_a_librdkafka_processor_writes(tmp_path):
    conv, consumed, commits, events = _converted(tmp_path, [
        '{"ev":"pipeline-start","ts":10,"pid":1,"processing":"exactly_once","client_version":"4.3.1",'
        '"transaction_version":2,"transactions":"v2"}',
        "[2026-11-26 18:00:00] INFO a log line that went to stdout (org.apache.kafka)",
        '{"ev":"pipeline-rebalance","ts":11,"type":"assigned","partitions":[0,2]}',
        '{"ev":"recv","ts":12,"a":1,"ps":40,"recs":[[0,7,"k1","p0-9",3],[2,4,null,null,null]]}',
        '{"ev":"commit","ts":13,"ok":true,"err":null,"offsets":[[0,8],[2,5]]}',
        '{"ev":"commit","ts":14,"ok":false,"err":"ProducerFencedException","offsets":[]}',
        '{"ev":"error","ts":15,"err":"AuthorizationException","reason":"run: denied","fatal":true}',
    ])
    assert conv.started["transactions"] == "v2"
    rows = consumed.sort_values("offset").to_dict("records")
    assert [(r["partition"], r["offset"], r["key"], r["record_id"], r["poll_seq"]) for r in rows] == [
        (2, 4, None, None, 41), (0, 7, "k1", "p0-9", 40)]
    assert {(r["consumer"], r["group_id"], r["phase"], r["topic"], r["isolation"], r["assignment"],
             r["recv_ts_us"]) for r in rows} == {("pl0i1", "g-pl0", "run", "in", "read_committed", 1, 12)}
    assert rows[1]["leader_epoch"] == 3
    assert sorted(zip(commits.partition, commits.offset, commits.ok)) == [(0, 8, True), (2, 5, True)]
    by_name = {n: json.loads(d) for n, d in zip(events.name, events.detail)}
    assert set(by_name) == {"pipeline-start", "pipeline-rebalance", "pipeline-error", "workload-died"}
    assert set(events.target) == {"pl0i1"} and set(events.kind) == {"client"}
    assert by_name["pipeline-rebalance"] == {"pipeline": "pl0", "group_id": "g-pl0", "type": "assigned",
                                             "partitions": [0, 2]}
    assert by_name["workload-died"]["fatal"] is True and conv.fatal["err"] == "AuthorizationException"
    assert sorted(events.ts_us) == [10, 11, 15, 15]


def test_a_java_pipeline_slot_runs_a_java_processor_with_the_slots_transactional_id(tmp_path):
    """Pipeline.start_instance picks the Java handle; with no cluster its container cannot run:
    the instance is dead (exit 1), not hung, and says why."""
    events = EventLog(str(tmp_path), "r", writer_name="e")
    ctx = SimpleNamespace(dir=str(tmp_path), run_id="r", bootstrap="x:9092", seed=0, cluster=None,
                          client_config={"security.protocol": "PLAINTEXT"}, events=events)
    spec = pipeline(0, {"input_topic": "in", "output_topic": "out", "client": "java",
                        "client_config": {"fetch.max.wait.ms": "50"}})
    p = Pipeline(spec, ctx, clients_version=None)
    p.start_instance("pl0i0", "pl0i0.1")
    w = p.workers["pl0i0.1"]
    assert isinstance(w, JavaProcessor) and w.wait(30)
    assert w.s.transactional_id == "r-pl0i0"
    assert w.s.client_config == {"fetch.max.wait.ms": "50"}     # no librdkafka connection settings
    assert (w.exitcode, w.died, p.died()) == (1, True, ["pl0i0.1"])
    events.close()
    names = sorted(read_table(tmp_path, "events").to_pandas().name)
    assert names == ["pipeline-instance-start", "workload-died"], names
