"""The pipeline family's checker on hand-built histories, through the real pipeline:
each kind found where it is (an input never written out, one written twice, a count
that skips, a count that repeats), and the look-alikes kept out of the violations: a
processor killed and restarted that rebuilt its counts correctly, an aborted
transaction's outputs (never in the read_committed drain), a failed input that no
output names, and an at-least-once pipeline's duplicates (counted, not a violation)."""
from __future__ import annotations

import json

import pytest
from histories import T0, History, anomaly_rows, reconcile

from families.pipelines.metrics import PipelineMetrics, pipeline_metrics
from verifiers.expectations import load_expectations
from verifiers.facts import FACTS
from verifiers.verdict import judge

pytestmark = pytest.mark.spark

S = 1_000_000


class PipeHistory(History):
    def __init__(self, run_dir):
        super().__init__(run_dir)
        self.out_offset: dict[str, int] = {}

    def config(self, name: str, inp: str, out: str, processing: str) -> None:
        self.event("client", "pipeline-config", T0, name, json.dumps(
            {"pipeline": name, "input_topic": inp, "output_topic": out,
             "processing": processing}))

    def inputs(self, topic: str, producer: str, n: int, keys: int = 2,
               offsets: list[int] | None = None) -> None:
        """n acked inputs, drained; `offsets`: where each is (default 0, 1, …; gaps are
        what read_committed never shows: an aborted input transaction, its marker)."""
        for s in range(n):
            o = offsets[s] if offsets else s
            self.w["produced"].append({
                "producer": producer, "seq": s, "record_id": f"{producer}-{s}",
                "key": f"k{s % keys}", "topic": topic, "partition": 0, "offset": o,
                "status": "acked", "send_ts_us": T0 + s * S, "ack_ts_us": T0 + s * S + 10})
            self.drain(topic, 0, o, f"{producer}-{s}", isolation="read_committed")

    def output(self, topic: str, source: str, key: str, count: int | None,
               writer: tuple[str, int] | None = None, partition: int = 0) -> int:
        """A drained output; `writer`: (instance, txn) as its value names them. Its
        offset is the partition's next (skip() leaves room for what read_committed
        never shows)."""
        o = self.out_offset.get(f"{topic}/{partition}", 0)
        self.out_offset[f"{topic}/{partition}"] = o + 1
        self.w["consumed"].append({
            "consumer": "drain", "group_id": None, "phase": "drain", "topic": topic,
            "partition": partition, "offset": o, "key": key, "record_id": None,
            "isolation": "read_committed", "recv_ts_us": self.tick(),
            "source_record_id": source, "key_count": count,
            "pipeline_instance": writer[0] if writer else None,
            "pipeline_txn": writer[1] if writer else None})
        return o

    def skip(self, topic: str, n: int, partition: int = 0) -> None:
        """n offsets of the output partition the drain never sees (an aborted
        transaction's outputs, its marker)."""
        key = f"{topic}/{partition}"
        self.out_offset[key] = self.out_offset.get(key, 0) + n

    def read(self, instance: str, topic: str, rid: str, offset: int, ts: int,
             group: str = "pl0") -> None:
        """A processor instance received an input (its own `run` row)."""
        self.consume(topic, 0, offset, rid, consumer=instance, group=group,
                     isolation="read_committed", ts=ts)


def test_each_pipeline_kind_and_no_look_alike(tmp_path, spark):
    h = PipeHistory(tmp_path)
    h.config("pl0", "in", "out", "exactly_once")
    h.inputs("in", "p0", 10)
    h.send("in", "p0", 10, status="failed", offset=None)       # never acked: nothing owed
    for s, c in ((0, 1), (1, 1), (2, 2), (3, 2)):
        h.output("out", f"p0-{s}", f"k{s % 2}", c)
    # instance pl0i0 killed in a transaction (its outputs aborted: not drained), restarted:
    # it rebuilt k0 = 2, k1 = 2 from the output log and goes on from there
    h.event("client", "pipeline-instance-kill", T0 + 4 * S, "pl0i0", json.dumps({"pipeline": "pl0"}))
    h.event("client", "pipeline-instance-restart", T0 + 5 * S, "pl0i0.1",
            json.dumps({"pipeline": "pl0"}))
    h.output("out", "p0-4", "k0", 3)
    h.output("out", "p0-5", "k1", 3)
    h.output("out", "p0-5", "k1", 3)          # written twice, counted twice: duplicate, repeat
    h.output("out", "p0-6", "k0", 5)          # k0 3 -> 5: gap
    # p0-7: never written out: lost
    h.output("out", "p0-8", "k0", 6)
    h.output("out", "p0-9", "k1", 4)
    h.close()
    done = reconcile(tmp_path, spark)
    a = done.summary["anomalies"]
    assert a["pipeline_lost"] == 1
    assert a["pipeline_duplicate"] == 1
    assert a["state_gap"] == 1
    assert a["state_repeat"] == 1
    assert a["lost"] == 0 and a["duplicate"] == 0 and a["unexpected"] == 0
    # outputs that name no writer (a history from before pipeline_instance): unjudged
    assert a["int_send_skip"] == a["int_poll_skip"] == 0
    assert done.summary["counts"]["consumed_foreign"] == 10      # the outputs: not records
    assert done.verdict.status == "failed"
    lost = anomaly_rows(tmp_path, "pipeline_lost")
    assert [(r["record_id"], r["pipeline"], r["processing"]) for r in lost] == [
        ("p0-7", "pl0", "exactly_once")]
    assert lost[0]["explain_at_us"] == T0 + 7 * S + 10          # the input's ack
    dup = anomaly_rows(tmp_path, "pipeline_duplicate")
    assert sorted((r["source_record_id"], r["output_offset"], r["copies"]) for r in dup) == [
        ("p0-5", 5, 2), ("p0-5", 6, 2)]
    assert dup[0]["topic"] == "in" and dup[0]["offset"] == 5    # explained by its input
    gap = anomaly_rows(tmp_path, "state_gap")
    assert [(r["source_record_id"], r["previous_count"], r["key_count"]) for r in gap] == [
        ("p0-6", 3, 5)]
    rep = anomaly_rows(tmp_path, "state_repeat")
    assert [(r["source_record_id"], r["output_offset"], r["previous_count"], r["key_count"])
            for r in rep] == [("p0-5", 6, 3, 3)]
    failed = " ".join(done.verdict.failures)
    assert "pipeline_lost" in failed and "state_gap" in failed
    # duplicate and repeat are judged only with the fact: unknown here
    assert any("pipeline_duplicate" in r for r in done.verdict.not_judged)


def test_at_least_once_duplicates_are_counted_not_violations(tmp_path, spark):
    h = PipeHistory(tmp_path)
    h.config("pl1", "in2", "out2", "at_least_once")
    h.inputs("in2", "q0", 4, keys=1)
    for s, c in ((0, 1), (1, 2), (2, 3)):
        h.output("out2", f"q0-{s}", "k0", c)
    # killed after writing q0-1, q0-2 but before committing their offsets: read again,
    # and counted on from the rebuilt count (no repeat, no gap)
    h.output("out2", "q0-1", "k0", 4)
    h.output("out2", "q0-2", "k0", 5)
    h.output("out2", "q0-3", "k0", 6)
    h.close()
    done = reconcile(tmp_path, spark, {"pipelines": True, "pipeline_exactly_once": False})
    a = done.summary["anomalies"]
    assert a["pipeline_duplicate"] == 2
    assert a["pipeline_lost"] == a["state_gap"] == a["state_repeat"] == 0
    assert done.verdict.status == "passed", done.verdict.failures
    # the same history, claimed exactly-once: the duplicates are violations
    exps = load_expectations(None, "defaults")
    verdict = judge(done.summary, exps, {**{f: None for f in FACTS},
                                         "pipeline_exactly_once": True}, {})
    assert verdict.status == "failed"
    assert any("pipeline_duplicate" in f for f in verdict.failures)


def test_a_churn_counts_as_a_hand_over_only_after_the_instance_had_output_committed(tmp_path, spark):
    """pipeline_handovers: churned (killed or closed, not at the run's end) instances whose
    outputs the drain read. pl0i0 wrote and was killed: one; pl0i1 was killed before it
    committed anything, pl0i2 closed at the run's end: none. A run whose churn hit only
    instances with nothing committed moved no state: by default it fails."""
    h = PipeHistory(tmp_path)
    h.config("pl0", "in", "out", "exactly_once")
    h.inputs("in", "p0", 4)
    for s, c in ((0, 1), (1, 1)):
        h.output("out", f"p0-{s}", f"k{s % 2}", c, writer=("pl0i0", 0))
    for s, c in ((2, 2), (3, 2)):
        h.output("out", f"p0-{s}", f"k{s % 2}", c, writer=("pl0i2", 0))
    for t, name, inst, why in ((3, "pipeline-instance-kill", "pl0i1", None),
                               (4, "pipeline-instance-kill", "pl0i0", None),
                               (9, "pipeline-instance-close", "pl0i2", "run-end")):
        h.event("client", name, T0 + t * S, inst, json.dumps({"pipeline": "pl0", "why": why}))
    h.close()
    done = reconcile(tmp_path, spark, {"pipelines": True, "pipeline_exactly_once": True,
                                       "pipeline_churned": True})
    assert done.summary["counts"]["pipeline_handovers"] == 1
    assert done.summary["pipelines"]["pl0"]["handovers"] == 1
    assert done.verdict.status == "passed", done.verdict.failures
    doc = done.summary.to_dict()
    summary = {**doc, "counts": {**doc["counts"], "pipeline_handovers": 0}}
    facts = {**{f: None for f in FACTS}, "pipelines": True, "pipeline_churned": True}
    verdict = judge(summary, load_expectations(None, "defaults"), facts, {})
    assert verdict.failures == (
        "pipeline_handovers: 0 <= 0 (expected pipeline_handovers > 0 when pipeline_churned)",)
    assert judge(summary, load_expectations(None, "defaults"),
                 dict(facts, pipeline_churned=False), {}).status == "passed"


def test_a_run_without_pipelines_has_none_of_their_kinds(tmp_path, spark):
    h = History(tmp_path)
    for s in range(3):
        h.send("t", "p0", s, offset=s)
        h.drain("t", 0, s, f"p0-{s}")
    h.close()
    a = reconcile(tmp_path, spark).summary["anomalies"]
    assert a["pipeline_lost"] == a["pipeline_duplicate"] == a["state_gap"] == a["state_repeat"] == 0


def test_metrics_read_each_instances_last_stats():
    ev = [{"ts_us": T0 + i, "kind": "client", "name": n, "target": t,
           "detail": json.dumps({"pipeline": "pl0", **d})} for i, (n, t, d) in enumerate([
               ("pipeline-config", "pl0", {"processing": "exactly_once"}),
               ("pipeline-instance-start", "pl0i0", {}),
               ("pipeline-stats", "pl0i0", {"begun": 3, "committed": 2, "aborted": 0, "outputs": 20}),
               ("pipeline-instance-kill", "pl0i0", {}),
               ("pipeline-instance-restart", "pl0i0.1", {}),
               ("pipeline-instance-start", "pl0i0.1", {}),
               ("pipeline-stats", "pl0i0.1", {"begun": 1, "committed": 1, "aborted": 1, "outputs": 5}),
               ("pipeline-closed", "pl0i0.1", {"begun": 2, "committed": 1, "aborted": 1, "outputs": 9}),
               ("pipeline-fenced", "pl0i0", {}),
               ("pipeline-rebuild", "pl0i0.1", {})])]
    m = pipeline_metrics(ev)["pl0"]
    assert (m.instances, m.kills, m.restarts, m.fenced, m.rebuilds) == (2, 1, 1, 1, 1)
    assert (m.committed, m.aborted, m.outputs) == (3, 1, 29)
    # summary.json's form, the same keys in the same order as before it was typed
    doc = m.to_dict()
    assert list(doc) == ["processing", "instances", "kills", "restarts", "fenced",
                         "rebalances", "aborted_events", "begun", "committed", "aborted", "outputs", "restores",
                         "rebuilds"]
    assert PipelineMetrics.from_dict(doc) == m


def test_a_pipeline_whose_instances_wrote_no_stats_has_no_stat_keys():
    ev = [{"ts_us": T0, "kind": "client", "name": "pipeline-config", "target": "pl0",
           "detail": json.dumps({"pipeline": "pl0", "processing": "at_least_once"})}]
    m = pipeline_metrics(ev)["pl0"]
    assert m.committed is None
    assert m.to_dict() == {"processing": "at_least_once", "instances": 0, "kills": 0, "restarts": 0,
                           "fenced": 0, "rebalances": 0, "aborted_events": 0, "rebuilds": 0}
    assert PipelineMetrics.from_dict(m.to_dict()) == m


def test_rows_name_the_instance_and_transaction(tmp_path, spark):
    """An output row names the instance and transaction its value carries; a lost input
    the instance that last received it and what became of that instance; a row says
    which broker coordinated its instance's transactions where a fault found it, and
    otherwise that the coordinator is not observed."""
    h = PipeHistory(tmp_path)
    h.config("pl0", "in", "out", "exactly_once")
    h.inputs("in", "p0", 4, keys=1)
    h.output("out", "p0-0", "k0", 1, ("pl0i0", 0))
    h.output("out", "p0-1", "k0", 2, ("pl0i0", 0))
    h.output("out", "p0-1", "k0", 2, ("pl0i1", 5))       # a second owner wrote it too
    # p0-2: received by pl0i0, whose transaction 1 was aborted; then by pl0i1, killed
    h.read("pl0i0", "in", "p0-2", 2, T0 + 20 * S)
    h.event("client", "pipeline-txn-aborted", T0 + 21 * S, "pl0i0",
            json.dumps({"pipeline": "pl0", "txn": 1, "why": "interval: _FENCED"}))
    h.read("pl0i1", "in", "p0-2", 2, T0 + 22 * S)
    h.event("client", "pipeline-instance-kill", T0 + 23 * S, "pl0i1",
            json.dumps({"pipeline": "pl0", "signal": "SIGKILL"}))
    # p0-3: received by pl0i0, which was then fenced in transaction 2
    h.read("pl0i0", "in", "p0-3", 3, T0 + 24 * S)
    h.event("client", "pipeline-fenced", T0 + 25 * S, "pl0i0",
            json.dumps({"pipeline": "pl0", "txn": 2, "error": "_FENCED"}))
    # a fault found pl0i0's transaction coordinator (kafka-2); pl0i1's was never asked
    h.event("fault", "sigstop", T0 + 19 * S, "kafka-2", json.dumps(
        {"label": "timeline[0] sigstop", "selector": "txn_coordinator_of('pl0i0')",
         "transactional_id": "run-7-pl0i0", "node_ids": [2]}))
    h.close()
    done = reconcile(tmp_path, spark)
    assert done.summary["anomalies"]["pipeline_lost"] == 2
    lost = sorted(anomaly_rows(tmp_path, "pipeline_lost"), key=lambda r: r["record_id"])
    assert [(r["record_id"], r["instance"], r["read_at_us"], r["instance_then"], r["txn"])
            for r in lost] == [
        ("p0-2", "pl0i1", T0 + 22 * S, "pipeline-instance-kill", None),
        ("p0-3", "pl0i0", T0 + 24 * S, "pipeline-fenced", 2)]
    assert lost[0]["txn_coordinator"].startswith("not observed")         # pl0i1
    assert lost[1]["txn_coordinator"].startswith(                        # pl0i0
        f"kafka-2 when timeline[0] sigstop was injected (ts_us {T0 + 19 * S}; FindCoordinator "
        "for run-7-pl0i0)"), lost[1]["txn_coordinator"]
    assert lost[0]["fault_id"] == "none"                     # the explainer's columns too
    dup = anomaly_rows(tmp_path, "pipeline_duplicate")
    assert sorted((r["output_offset"], r["instance"], r["txn"]) for r in dup) == [
        (1, "pl0i0", 0), (2, "pl0i1", 5)]
    rep = anomaly_rows(tmp_path, "state_repeat")
    assert [(r["instance"], r["txn"], r["previous_count"]) for r in rep] == [("pl0i1", 5, 2)]
    assert rep[0]["txn_coordinator"].startswith("not observed")
    assert [r["txn_coordinator"].split(" ")[0] for r in sorted(dup, key=lambda r: r["instance"])] \
        == ["kafka-2", "not"]                                  # pl0i0's row, pl0i1's


EOS = {"pipelines": True, "pipeline_exactly_once": True}


def test_aborted_and_fenced_writes_are_no_skips(tmp_path, spark):
    """Look-alikes of every kind, none a violation: an input transaction aborted (its
    offsets never shown to read_committed), a processor transaction aborted (its outputs
    never drained), a fenced zombie's outputs between its successor's (aborted, never
    drained), and the successor going on from the rebuilt count. Skips are counted in
    places of the read_committed log, never in offsets."""
    h = PipeHistory(tmp_path)
    h.config("pl0", "in", "out", "exactly_once")
    # p0-0 p0-1 at 0 1; offsets 2 3 4: an aborted input transaction and its marker
    h.inputs("in", "p0", 8, keys=1, offsets=[0, 1, 5, 6, 7, 8, 9, 10])
    h.output("out", "p0-0", "k0", 1, ("pl0i0", 0))
    h.output("out", "p0-1", "k0", 2, ("pl0i0", 0))
    h.skip("out", 1)                                      # txn 0's commit marker
    for off, rid in ((5, "p0-2"), (6, "p0-3")):
        h.read("pl0i0", "in", rid, off, T0 + 30 * S)
    h.skip("out", 3)                                      # txn 1's outputs, aborted, marker
    h.event("client", "pipeline-txn-aborted", T0 + 31 * S, "pl0i0",
            json.dumps({"pipeline": "pl0", "txn": 1, "why": "interval: _TIMED_OUT"}))
    # the restarted slot fences pl0i0; the zombie's last writes land between its own
    h.event("client", "pipeline-instance-restart", T0 + 32 * S, "pl0i0.1",
            json.dumps({"pipeline": "pl0"}))
    h.output("out", "p0-2", "k0", 3, ("pl0i0.1", 0))
    h.skip("out", 1)                                      # the zombie's p0-3, aborted
    h.output("out", "p0-3", "k0", 4, ("pl0i0.1", 0))
    h.skip("out", 2)                                      # the zombie's abort, txn 0's commit
    h.event("client", "pipeline-fenced", T0 + 33 * S, "pl0i0",
            json.dumps({"pipeline": "pl0", "txn": 2, "error": "_FENCED"}))
    for i in range(4, 8):
        h.output("out", f"p0-{i}", "k0", i + 1, ("pl0i0.1", 1))
    h.close()
    done = reconcile(tmp_path, spark, EOS)
    a = done.summary["anomalies"]
    for kind in ("pipeline_lost", "pipeline_duplicate", "state_gap", "state_repeat",
                 "int_send_skip", "int_poll_skip", "aborted_read", "lost"):
        assert a[kind] == 0, kind
    assert done.verdict.status == "passed", done.verdict.failures


def test_int_send_skip_and_int_poll_skip(tmp_path, spark):
    """A zombie's committed output between a transaction's two outputs (int_send_skip),
    and transactions whose inputs jump over records of their partition (int_poll_skip):
    violations under exactly_once, counted under at_least_once."""
    h = PipeHistory(tmp_path)
    h.config("pl0", "in", "out", "exactly_once")
    h.inputs("in", "p0", 8, keys=1)
    for rid, writer in (("p0-0", ("pl0i0", 0)), ("p0-1", ("pl0i1", 7)),   # the other writer
                        ("p0-2", ("pl0i0", 0)),
                        ("p0-3", ("pl0i0", 1)), ("p0-6", ("pl0i0", 1)),   # 4 and 5 jumped
                        ("p0-4", ("pl0i0", 2)), ("p0-5", ("pl0i0", 2)),
                        ("p0-7", ("pl0i0", 3))):
        h.output("out", rid, None, None, writer)
    h.close()
    done = reconcile(tmp_path, spark, EOS)
    a = done.summary["anomalies"]
    assert a["int_send_skip"] == 1 and a["int_poll_skip"] == 2
    assert a["pipeline_lost"] == a["pipeline_duplicate"] == 0
    send = anomaly_rows(tmp_path, "int_send_skip")
    assert [(r["output_offset"], r["previous_offset"], r["instance"], r["txn"], r["delta"],
             r["skipped_writers"]) for r in send] == [(2, 0, "pl0i0", 0, 2, ["pl0i1 txn 7"])]
    assert send[0]["record_id"] == "p0-2" and send[0]["explain_at_us"] == T0 + 2 * S + 10
    poll = sorted(anomaly_rows(tmp_path, "int_poll_skip"), key=lambda r: r["output_offset"])
    assert [(r["output_offset"], r["instance"], r["txn"], r["input_offset"],
             r["previous_input_offset"], r["delta"], r["skipped"]) for r in poll] == [
        (2, "pl0i0", 0, 2, 0, 2, ["p0-1"]), (4, "pl0i0", 1, 6, 3, 3, ["p0-4", "p0-5"])]
    assert done.verdict.status == "failed"
    failed = " ".join(done.verdict.failures)
    assert "int_send_skip" in failed and "int_poll_skip" in failed
    verdict = judge(done.summary, load_expectations(None, "defaults"),
                    {**{f: None for f in FACTS}, "pipelines": True,
                     "pipeline_exactly_once": False}, {})
    assert verdict.status == "passed", verdict.failures


def test_the_family_words_read_the_summary_json_form():
    from families.pipelines import FAMILY
    doc = PipelineMetrics("exactly_once", 2, 1, 1, 1, 3, 0, 4, 3, 1, 29, 2).to_dict()
    assert FAMILY.words({"pipelines": {"pl0": doc}}) == [
        "pl0 (exactly_once): 29 outputs, 3 transactions committed, 1 aborted (of the instances' "
        "last stats; a killed instance's last ones are lost with it); 2 instances started, "
        "1 killed, 1 fenced, 0 rebuilt after another fatal error; 3 assignments, each "
        "rebuilding its counts from the output topic."]
    doc["handovers"] = 0
    assert "none churned after an output of theirs was committed" in FAMILY.words(
        {"pipelines": {"pl0": doc}})[0]
