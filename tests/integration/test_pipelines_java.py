"""One short exactly-once pipeline run on Kafka's Java clients (`client: java`, 4.3):
our producer writes keyed inputs, two Java processor instances (a container each) count
them per key and write one output per input in transactions with their input offsets;
an output partition's leader is killed, and one instance is killed and comes back.
Asserted from the history: every acked input was written out exactly once, each key's
counts in the output log run 1, 2, 3 … with no gap or repeat, the instances rebuilt
their counts from the output topic and said which transactions protocol they spoke."""
from __future__ import annotations

import pipeline_history as ph  # same dir: pytest puts it on sys.path
import pytest

# the leader of an output partition killed 5 s in; one instance killed 3 s after its
# first output was committed (the churn's clock), back 2 s later, within the 28 s load
SCENARIO = ph.pipeline_scenario("pipeline-java-ci", 37, duration_s=28, rate=200, churn_first_s=3,
                                client="java", records_per_txn=50, faults=[ph.kill_out_leader(5)])


@pytest.mark.timeout(600)
def test_an_exactly_once_java_pipeline_with_a_broker_and_a_processor_killed(chaos_run, tmp_path):
    result, run_dir, summary = ph.run_scenario(chaos_run, tmp_path, SCENARIO)
    acked, mine = ph.check_exactly_once_run(run_dir, summary, min_acked=2000)
    starts = ph.check_java_processors(run_dir, mine, acked)
    assert {s["client_version"] for s in starts} == {"4.3.1"}, starts
    ph.check_passed_and_cleaned_up(result, summary)
