"""The transactions family's anomaly kinds: what read_committed and all-or-nothing
promise."""
from __future__ import annotations

from families.base import Kind, distinct
from families.transactions import checker as rows

KINDS: tuple[Kind, ...] = (
    Kind("aborted_read", rows.aborted_read, distinct("record_id"),
         "read_committed consumer saw a record of an aborted transaction",
         "records of aborted transactions on {tp} reached a read_committed consumer",
         "aborted_read == 0"),
    Kind("torn_transaction", rows.torn_transaction, distinct("producer", "txn_seq"),
         "a transaction not all-or-nothing: committed and partly consumed, or aborted and "
         "partly seen by read_committed",
         "transactions writing to {tp} were torn: only part of them is visible",
         "torn_transaction == 0", mark=("#e08214", "P")),
)
