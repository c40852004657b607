"""PySpark reconciliation of a run history: anomalies, metrics and the run report.

Entry point: `verifiers.verify.verify_run(run_dir, ...)`. It reads only the
history files of docs/history.md (the contract: ../shared/spec/history.md) and writes `RUN_DIR/report/`.
"""
