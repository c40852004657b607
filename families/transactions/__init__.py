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

from families.base import Family, SummaryKeys
from families.transactions.kinds import KINDS


def _words(summary: SummaryKeys) -> list[str]:
    transactional = ((summary.get("config") or {}).get("facts") or {}).get("transactional")
    if transactional is False:
        return ["No producer of this run was transactional: nothing here could be torn."]
    c = summary.get("counts") or {}
    return [f"{c.get('client_fatals', 0)} fatal client errors; read_uncommitted readers saw "
            f"{c.get('aborted_seen_uncommitted', 0)} records of aborted transactions (they "
            "promise no isolation: counted, not an anomaly)."]


FAMILY = Family(
    name="transactions", title="Transactions",
    kinds=KINDS,
    named_by=lambda workload: True,
    facts=lambda w: {"transactional": any(p.transactions is not None for p in w.producers)},
    fact_docs={"transactional": "some producer is transactional"}, words=_words)
