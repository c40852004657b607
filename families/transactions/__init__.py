"""The transactions family: producers in transactional mode (ours, librdkafka's
transactional API: workloads/transactional.py; Kafka's Java client:
workloads/java_txn.py) and read_committed readers; the history's transaction
columns (txn_id, txn_seq, txn_outcome); its checker over the records views
(checker.py); its kinds (kinds.py).

Its clients are records producers in their transactional mode, started by the records
family (`start` None). Its checks hold on every history (one without transactions has
none to tear, and then they cost no Spark job), so every run is judged by them, as
runs always were; its facts say whether the run was transactional.
"""
from __future__ import annotations

from families.base import Family
from families.transactions.kinds import KINDS

FAMILY = Family(
    name="transactions", title="Transactions",
    kinds=KINDS,
    named_by=lambda workload: True,
    facts=lambda w: {"transactional": any(p.transactions is not None for p in w.producers)},
    fact_docs={"transactional": "some producer is transactional"})
