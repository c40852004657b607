"""PySpark reconciliation of a run history: anomalies, metrics and the run report.

Entry point: `spark_reports.pipeline.reconcile` (verifiers.verify.verify_run calls it). It reads only the
history files of docs/history.md (the contract: ../shared/spec/history.md) and writes `RUN_DIR/report/`.
"""
