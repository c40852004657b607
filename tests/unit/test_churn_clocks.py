"""A group's churn starts its clock once the member it bounces first holds something:
a pipeline's first victim has a committed output, a share group's has received a
record; or a fixed time after the start, said either way. (Their real-cluster runs:
tests/integration/test_pipelines*.py, test_share_groups.py.)"""
from __future__ import annotations

import json
import time
from types import SimpleNamespace

from families.pipelines.churn_clock import FirstOutputWatch
from families.shares.clients import ShareGroup
from families.shares.section import share_group
from workloads.records import pipeline_value
from workloads.share_log import journal_path


class Message:
    def __init__(self, value: bytes | None):
        self._value = value

    def error(self):
        return None

    def value(self):
        return self._value


class Reader:
    """What the watch asks of its consumer: batches of messages, then a close."""
    def __init__(self, batches: list[list[bytes | None]]):
        self.batches, self.closed = batches, False

    def consume(self, n, timeout):
        return [Message(v) for v in (self.batches.pop(0) if self.batches else [])]

    def close(self):
        self.closed = True


def test_the_pipeline_clock_waits_for_its_victims_committed_output():
    watch = FirstOutputWatch({}, "out", victim="pl0i0")
    reader = watch.reader = Reader([[pipeline_value("p0-1", 1, "pl0i1", 0), None, b"not ours"],
                                    [pipeline_value("p0-2", 1, "pl0i0", 0)]])
    assert watch() is False and watch.writers == {"pl0i1"}     # another's output: not yet
    assert watch() is True and reader.closed and watch.reader is None
    assert watch.done == {"waited_s": watch.done["waited_s"], "victim": "pl0i0",
                          "victim_had_output": True, "instances_with_output": ["pl0i0", "pl0i1"]}
    assert watch() is True                                    # stays started


def test_the_pipeline_clock_starts_anyway_after_its_limit_or_a_read_error():
    watch = FirstOutputWatch({}, "out", victim="pl0i0", max_s=0.05)
    watch.reader = Reader([])
    assert watch() is False
    time.sleep(0.06)
    assert watch() is True and watch.done["victim_had_output"] is False

    class Broken(Reader):
        def consume(self, n, timeout):
            raise RuntimeError("no broker")
    broken = FirstOutputWatch({}, "out", victim="pl0i0")
    broken.reader = Broken([])
    assert broken() is True and broken.done["error"] == "RuntimeError: no broker"


def test_the_share_clock_waits_for_its_victims_first_record(tmp_path, monkeypatch):
    said = []
    events = SimpleNamespace(emit=lambda kind, name, target, **d: said.append((name, target, d)))
    ctx = SimpleNamespace(dir=str(tmp_path), seed=3, run_id="r", bootstrap="x:9092",
                          client_config={}, events=events)
    g = share_group(0, {"members": 2}, "q")
    group = ShareGroup(g, ctx)
    victim, other = g.member_names
    for member, lines in ((victim, ['{"ev":"start","ts":1}']),
                          (other, ['{"ev":"start","ts":1}', '{"ev":"recv","ts":2,"recs":[]}'])):
        path = journal_path(tmp_path, g.group_id, member)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("\n".join(lines) + "\n")
    assert group._churn_ready() is False and not said         # only the other has a record
    with journal_path(tmp_path, g.group_id, victim).open("a") as f:
        f.write('{"ev":"recv","ts":3,"recs":[["q",0,0,1,"p0-0"]]}\n')
    assert group._churn_ready() is True
    [(name, target, detail)] = said
    assert (name, target, detail["victim_had_record"]) == ("share-churn-clock", victim, True)
    said.clear()
    monkeypatch.setattr("families.shares.clients.CHURN_CLOCK_MAX_S", 0.0)
    late = ShareGroup(share_group(1, {"members": 2}, "q"), ctx)
    assert late._churn_ready() is True and said[0][2]["victim_had_record"] is False
    json.dumps(said[0][2])                                     # an event's detail is JSON


def test_a_churn_whose_clock_never_started_is_said_so():
    """A 3.9.2 run: the first victim's first output came after the load had ended (a
    leader kill stalled the group), so the churn bounced none; the words say why, not
    only that nothing moved with state."""
    from families.pipelines import FAMILY
    from families.pipelines.metrics import pipeline_metrics

    def event(name, target, ts, **d):
        return {"kind": "client", "name": name, "target": target, "ts_us": ts,
                "detail": json.dumps({"pipeline": "pl0", **d})}
    events = [event("pipeline-config", "pl0", 1, processing="exactly_once"),
              event("pipeline-instance-start", "pl0i0", 2),
              event("pipeline-churn-clock", "pl0i0", 3, started=False, waited_s=47.8,
                    victim="pl0i0", victim_had_output=False, instances_with_output=[])]
    m = pipeline_metrics(events)["pl0"]
    m.handovers = 0
    doc = m.to_dict()
    assert (doc["churn_started"], doc["churn_waited_s"], doc["kills"]) == (False, 47.8, 0)
    [words] = FAMILY.words({"pipelines": {"pl0": doc}})
    assert "the churn bounced none" in words and "ended 47.8 s after the start" in words
    doc.update(churn_started=True, churn_waited_s=3.0)
    assert "none churned after an output of theirs" in FAMILY.words({"pipelines": {"pl0": doc}})[0]
    assert "churn_started" not in pipeline_metrics(events[:2])["pl0"].to_dict()   # no churn: as before
