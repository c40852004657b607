"""The smallest workload family there can be, to show what adding one takes: one
package with its kinds, checker and metrics (here, defined in the test), and one line
in families/__init__.py's registry (here, the tuple handed to the pipeline). The
pipeline composes its checker with the others', writes its rows, counts them by its
own rule, adds its metrics to the summary, and the named families decide which
checkers and metrics run."""
from __future__ import annotations

import pytest
from histories import reconcile
from pyspark.sql import functions as F
from synthetic import SyntheticSpec, generate

from families import FAMILIES
from families.base import Family, Kind, RunData, distinct
from families.records.checker import POS_COLS, Inputs
from families.records.views import PRODUCED_COLS

pytestmark = pytest.mark.spark


def late_acks(x: Inputs):
    """Its checker: acknowledged records whose ack came over 1 ms after the send."""
    return x.views.records.where(
        (F.col("status") == "acked") & (F.col("ack_ts_us") - F.col("send_ts_us") > 1_000)
    ).select(*PRODUCED_COLS, *POS_COLS)


def acked_metrics(data: RunData) -> dict:
    """Its metrics: its own summary key and a count, from a table read on the driver."""
    acked = sum(r["status"] == "acked" for r in data.read("produced", ("status",)))
    return {"summary": {"tiny": {"acked": acked}}, "counts": {"tiny_acked": acked},
            "steps": {"tiny": 0.0}}


TINY = Family(name="tiny", title="Tiny: slow acks", named_by=lambda workload: True,
              kinds=(Kind("late_ack", late_acks, distinct("record_id"),
                          "acked more than 1 ms after its send",
                          "records of {tp} were acknowledged late", bad=False),),
              metrics=acked_metrics, counts=("tiny_acked",))


def test_a_new_family_is_its_package_and_one_registry_line(tmp_path, spark):
    generate(tmp_path, SyntheticSpec(records=2000, producers=2, partitions=2, rate_per_s=500,
                                     inject={"lost": 3}, seed=5))
    with_tiny = reconcile(tmp_path, spark, families=(*FAMILIES, TINY)).summary
    import pyarrow.parquet as pq
    produced = pq.read_table(tmp_path / "history" / "produced").to_pylist()
    late = {r["record_id"] for r in produced
            if r["status"] == "acked" and r["ack_ts_us"] - r["send_ts_us"] > 1_000}
    assert with_tiny["anomalies"]["late_ack"] == len(late) > 0
    # its metrics join the summary beside the records family's, its count the counts
    acked = sum(r["status"] == "acked" for r in produced)
    assert with_tiny["tiny"] == {"acked": acked} and with_tiny["counts"]["tiny_acked"] == acked
    assert "metrics.tiny" in with_tiny["step_seconds"]
    assert (tmp_path / "report" / "anomalies" / "late_ack").is_dir()
    # the other families' kinds are counted as before, beside it
    assert with_tiny["anomalies"]["lost"] == 3
    # a family not named is not checked: the records family alone has no transactions' kinds
    records_only = reconcile(tmp_path, spark, families=FAMILIES[:1]).summary
    assert "late_ack" not in records_only["anomalies"]
    assert "torn_transaction" not in records_only["anomalies"]
    assert records_only["anomalies"]["lost"] == 3
    assert "tiny" not in records_only and "tiny_acked" not in records_only["counts"]
    # the records family's metrics are its own, the same beside another family or alone
    assert records_only["metrics"] == with_tiny["metrics"] and records_only["metrics"]["per_second"]
