"""Kafka's Java VerifiableProducer/Consumer JSON lines -> the same history tables.

The sample lines follow the tools' Jackson output (field order as printed by
org.apache.kafka.tools.VerifiableProducer / VerifiableConsumer)."""
import json

from core.history import EventLog, HistoryWriter, read_table
from workloads.java_clients import JavaConsumerConverter, JavaProducerConverter, _properties

PRODUCER_LINES = """\
Option --producer.config has been deprecated and will be removed in a future version. Use --command-config instead.
{"timestamp":1700000000000,"name":"startup_complete"}
{"timestamp":1700000000100,"name":"producer_send_success","key":null,"value":"3.0","topic":"t","partition":1,"offset":0}
{"timestamp":1700000000101,"name":"producer_send_success","key":"1","value":"3.1","topic":"t","partition":0,"offset":7}
{"timestamp":1700000000102,"name":"producer_send_error","key":null,"value":"3.2","topic":"t","exception":"class org.apache.kafka.common.errors.TimeoutException","message":"Expiring 1 record(s)"}
{"timestamp":1700000000103,"name":"producer_send_error","key":null,"value":"3.3","topic":"t","exception":"class org.apache.kafka.common.errors.RecordTooLargeException","message":"too large"}
{"timestamp":1700000000104,"name":"producer_send_success","key":null,"value":"9.4","topic":"t","partition":0,"offset":8}
not json at all
{"timestamp":1700000000200,"name":"shutdown_complete"}
{"timestamp":1700000000201,"name":"tool_data","sent":6,"acked":2,"target_throughput":-1,"avg_throughput":12.5}
"""

CONSUMER_LINES = """\
{"timestamp":1700000001000,"name":"startup_complete"}
{"timestamp":1700000001001,"name":"partitions_assigned","partitions":[{"topic":"t","partition":0},{"topic":"t","partition":1}]}
{"timestamp":1700000001002,"name":"record_data","key":null,"value":"3.0","topic":"t","partition":1,"offset":0}
{"timestamp":1700000001002,"name":"record_data","key":"k1","value":"p0-5 xxxxxxxx","topic":"t","partition":0,"offset":7}
{"timestamp":1700000001002,"name":"record_data","key":null,"value":"something else","topic":"t","partition":0,"offset":8}
{"timestamp":1700000001003,"name":"records_consumed","count":3,"partitions":[{"topic":"t","partition":0,"count":2,"minOffset":7,"maxOffset":8}]}
{"timestamp":1700000001004,"name":"offsets_committed","offsets":[{"topic":"t","partition":0,"offset":9},{"topic":"t","partition":1,"offset":1}],"success":true}
{"timestamp":1700000001005,"name":"offsets_committed","offsets":[{"topic":"t","partition":0,"offset":9}],"error":"Commit cannot be completed","success":false}
{"timestamp":1700000001006,"name":"partitions_revoked","partitions":[{"topic":"t","partition":1}]}
{"timestamp":1700000001007,"name":"shutdown_complete"}
"""


def test_java_producer_lines_to_produced_rows(tmp_path):
    w = HistoryWriter(tmp_path, "produced", "r1", writer_name="j3")
    ev = EventLog(tmp_path, "r1", writer_name="ev")
    conv = JavaProducerConverter(prefix=3, topic="t", max_messages=8, writer=w, events=ev)
    for line in PRODUCER_LINES.splitlines():
        conv.feed(line)
    counts = conv.finish()
    w.close()
    ev.close()
    rows = {r["seq"]: r for r in read_table(tmp_path, "produced").to_pylist()}
    # tool_data says 6 were sent: seqs 4 and 5 never reported -> indeterminate; 6, 7 never sent
    assert sorted(rows) == [0, 1, 2, 3, 4, 5]
    assert counts == {"acked": 2, "failed": 1, "indeterminate": 3, "sent": 6}
    assert rows[0]["record_id"] == "j3-0" and rows[0]["producer"] == "j3"
    assert (rows[0]["status"], rows[0]["partition"], rows[0]["offset"]) == ("acked", 1, 0)
    assert rows[0]["send_ts_us"] == rows[0]["ack_ts_us"] == 1700000000100000
    assert rows[1]["key"] == "1" and rows[1]["offset"] == 7
    assert (rows[2]["status"], rows[2]["error"]) == ("indeterminate", "TimeoutException")
    assert (rows[3]["status"], rows[3]["error"]) == ("failed", "RecordTooLargeException")
    assert rows[3]["offset"] is None
    assert (rows[4]["status"], rows[4]["error"]) == ("indeterminate", "NO_DELIVERY_REPORT")
    names = [e["name"] for e in read_table(tmp_path, "events").to_pylist()]
    assert names == ["java-producer-startup", "java-producer-shutdown"]


def test_java_producer_without_tool_data_uses_max_messages(tmp_path):
    w = HistoryWriter(tmp_path, "produced", "r1", writer_name="j0")
    conv = JavaProducerConverter(prefix=0, topic="t", max_messages=3, writer=w)
    conv.feed('{"timestamp":1,"name":"producer_send_success","key":null,"value":"0.1",'
              '"topic":"t","partition":0,"offset":0}')
    assert conv.finish()["indeterminate"] == 2
    w.close()
    rows = read_table(tmp_path, "produced").to_pylist()
    assert sorted((r["seq"], r["status"]) for r in rows) == [
        (0, "indeterminate"), (1, "acked"), (2, "indeterminate")]


def test_java_consumer_lines_to_consumed_commits_events(tmp_path):
    consumed = HistoryWriter(tmp_path, "consumed", "r1", writer_name="jc0")
    commits = HistoryWriter(tmp_path, "commits", "r1", writer_name="jc0")
    ev = EventLog(tmp_path, "r1", writer_name="ev")
    conv = JavaConsumerConverter("jc0", "g1", "read_committed", consumed, commits, ev)
    for line in CONSUMER_LINES.splitlines():
        conv.feed(line)
    for w in (consumed, commits, ev):
        w.close()
    rows = read_table(tmp_path, "consumed").to_pylist()
    assert [r["record_id"] for r in rows] == ["j3-0", "p0-5", None]
    assert {(r["consumer"], r["group_id"], r["phase"], r["isolation"]) for r in rows} == {
        ("jc0", "g1", "run", "read_committed")}
    assert rows[1]["key"] == "k1" and rows[1]["offset"] == 7 and rows[0]["partition"] == 1
    c = read_table(tmp_path, "commits").to_pylist()
    assert [(r["partition"], r["offset"], r["ok"]) for r in c] == [(0, 9, True), (1, 1, True),
                                                                   (0, 9, False)]
    assert c[2]["error"] == "Commit cannot be completed" and c[0]["error"] is None
    evs = read_table(tmp_path, "events").to_pylist()
    reb = [json.loads(e["detail"]) for e in evs if e["name"] == "rebalance"]
    assert [(d["type"], d["partitions"]) for d in reb] == [
        ("assigned", [["t", 0], ["t", 1]]), ("revoked", [["t", 1]])]


def test_properties_file_format():
    assert _properties({"enable.idempotence": True, "retries": 5}) == \
        "enable.idempotence=true\nretries=5\n"
