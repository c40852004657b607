"""The share-group family's anomaly kinds: what KIP-932 promises a share group."""
from __future__ import annotations

from families.base import Kind, distinct
from families.shares import checker as rows

POSITION = distinct("group_id", "topic", "partition", "offset")

KINDS: tuple[Kind, ...] = (
    Kind("share_lost", rows.share_lost, distinct("group_id", "record_id"),
         "an acked record of a share-consumed topic that no member accepted or rejected "
         "with ok, and that Kafka did not archive at the delivery count limit",
         "acked records on {tp} were never accepted by share group {group}",
         "share_lost == 0", mark=("#d62728", "X")),
    Kind("share_double_accept", rows.share_double_accept, POSITION,
         "a position accepted with ok by two deliveries",
         "records on {tp} were accepted twice in share group {group}",
         "share_double_accept == 0", mark=("#9467bd", "D")),
    Kind("share_redelivered_after_accept", rows.share_redelivered_after_accept, ("rows", ()),
         "a delivery of a position that began after an earlier delivery of it was accepted with ok",
         "deliveries on {tp} came after the record was accepted (share group {group})",
         "share_redelivered_after_accept == 0", mark=("#8c564b", "v")),
    Kind("share_redelivered_after_reject", rows.share_redelivered_after_reject, ("rows", ()),
         "a delivery of a position that began after an earlier delivery of it was rejected "
         "with ok (Kafka archives a rejected record: beyond the history spec's kinds)",
         "deliveries on {tp} came after the record was rejected (share group {group})",
         "share_redelivered_after_reject == 0", mark=("#bcbd22", "^")),
    Kind("share_over_limit", rows.share_over_limit, ("rows", ()),
         "a delivery whose delivery_count exceeds the group's delivery count limit",
         "deliveries on {tp} went past the delivery count limit (share group {group})",
         "share_over_limit == 0"),
    Kind("share_concurrent", rows.share_concurrent, ("rows", ()),
         "a delivery of a position while another member still held it (within its lock, "
         "undecided, alive): legitimate after a share-partition leader change",
         "deliveries on {tp} went to {consumer} while another member held them", bad=False),
    Kind("share_redelivered", rows.share_redelivered, ("rows", ()),
         "extra deliveries of one position (k - 1 for k): the at-least-once cost",
         "records on {tp} were delivered again to share group {group}", bad=False),
)
