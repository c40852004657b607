"""One short exactly-once pipeline run on a real 4.3 cluster: our producer writes keyed
inputs, two librdkafka processor instances count them per key and write one output per
input in transactions with their input offsets; one instance is killed mid-run and comes
back. Asserted from the history, not only the verdict: every acked input was written out
exactly once, each key's counts in the output log run 1, 2, 3 … with no gap or repeat,
the kill happened, and the instances rebuilt their counts from the output topic."""
from __future__ import annotations

import pipeline_history as ph  # same dir: pytest puts it on sys.path
import pytest

# one instance killed 3 s after its first output was committed (the churn's clock,
# families/pipelines/churn_clock.py: it waited 2-15 s, 18-30 s at load 16), back 2 s
# later; 28 s of load, so that the instance comes back before the load ends (a rehearsal:
# clock 15 s, kill at 20 s of 22, no restart)
SCENARIO = ph.pipeline_scenario("pipeline-ci", 36, duration_s=28, rate=250, churn_first_s=3,
                                records_per_txn=50)


@pytest.mark.timeout(600)
def test_an_exactly_once_pipeline_with_a_processor_killed_mid_run(chaos_run, tmp_path):
    result, run_dir, summary = ph.run_scenario(chaos_run, tmp_path, SCENARIO)
    ph.check_exactly_once_run(run_dir, summary, min_acked=3000)
    ph.check_passed_and_cleaned_up(result, summary)
