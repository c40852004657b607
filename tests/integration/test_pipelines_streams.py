"""One short exactly-once pipeline run on Kafka Streams (`client: streams`, 4.3): our
producer writes keyed inputs, two Streams instances (a container each, exactly_once_v2)
count them per key in a state store and write one output per input; an output
partition's leader is killed, and one instance is killed and comes back. Asserted from
the history: every acked input was written out exactly once, each key's counts in the
output log run 1, 2, 3 … with no gap or repeat, a moved task's counts were restored from
its changelog, and the outputs name their writer but no transaction (Streams does not
say which)."""
from __future__ import annotations

import pipeline_history as ph  # same dir: pytest puts it on sys.path
import pytest

from core.history import read_table

# the leader of an output partition killed 13 s in (transactions in flight to it: each
# instance's commits wait for it, the moved tasks' restores too); one instance killed 3 s
# after its first output was committed, back 2 s later. Streams takes 3-10 s to its first
# assignment (CI: 10 s); the churn's clock (families/pipelines/churn_clock.py) waits for
# that: a kill before it moves no state, and no count is rebuilt.
SCENARIO = ph.pipeline_scenario("pipeline-streams-ci", 41, duration_s=28, rate=200, churn_first_s=3,
                                client="streams", faults=[ph.kill_out_leader(13)])


@pytest.mark.timeout(600)
def test_an_exactly_once_streams_pipeline_with_a_broker_and_an_instance_killed(chaos_run, tmp_path):
    result, run_dir, summary = ph.run_scenario(chaos_run, tmp_path, SCENARIO)
    acked, mine = ph.check_exactly_once_run(run_dir, summary, min_acked=2000)
    starts = ph.check_java_processors(run_dir, mine, acked)
    assert {(s["client_version"], s["streams_protocol"], s["application_id"])
            for s in starts} == {("4.3.1", "classic", "pl0")}, starts
    drained = read_table(run_dir, "consumed").to_pandas().query("phase == 'drain' and topic == 'out'")
    assert set(drained.pipeline_instance) <= {"pl0i0", "pl0i1", "pl0i0.1", "pl0i1.1"}
    assert drained.pipeline_txn.isna().all()           # Streams names no transaction
    assert summary["pipelines"]["pl0"]["committed"] > 0, summary["pipelines"]
    ph.check_passed_and_cleaned_up(result, summary)
