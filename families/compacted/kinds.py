"""The compacted family's anomaly kinds: what a compacted topic promises (the latest
value of every key survives; a delete is not undone)."""
from __future__ import annotations

from families.base import Kind, distinct
from families.compacted import checker as rows


def _write(version, tombstone) -> str:
    return f"a tombstone (v{version})" if tombstone else f"v{version}"


def _last_acked(r: dict, run) -> str:
    """key k17 on state-0: last acknowledged v42 at +31.2 s (offset 5 012, while
    timeline[0] kill was active)"""
    fault = r.get("fault_id")
    during = (f", while {run.fault_name(fault)} was active" if fault in (r.get("faults_at_ack") or [])
              else f", charged to {run.fault_name(fault)}" if fault and fault != "none" else "")
    return (f"key {r['key']} on {r['topic']}-{r['partition']}: last acknowledged "
            f"{_write(r['version'], r['tombstone'])} at {run.at(r.get('ack_ts_us'))} "
            f"(offset {r['offset']}{during})")


def stale_words(r: dict, run) -> str:
    held = ("the compacted log holds nothing of it" if r.get("held_offset") is None else
            f"the compacted log still holds {_write(r['held_version'], r['held_tombstone'])} "
            f"at offset {r['held_offset']}")
    return f"{_last_acked(r, run)}; {held}."


def resurrected_words(r: dict, run) -> str:
    age = r.get("age_ms")
    return (f"{_last_acked(r, run)}, {age / 1000:.1f} s before the drain read it "
            f"(delete.retention.ms {r.get('delete_retention_ms')}), below the cleaner's "
            f"checkpoint {r.get('cleaned_to')}; the compacted log still holds "
            f"v{r.get('older_version')} at offset {r.get('older_offset')}."
            if age is not None else f"{_last_acked(r, run)}; the compacted log still holds "
            f"v{r.get('older_version')} at offset {r.get('older_offset')}.")

KINDS: tuple[Kind, ...] = (
    Kind("compaction_stale", rows.compaction_stale, distinct("topic", "key"),
         "a key whose last acked write (highest offset) is not a tombstone, and whose value "
         "in the compacted log is an older version or absent, with no later indeterminate "
         "write for that key",
         "keys on {tp} read back an older version, or nothing, after compaction",
         "compaction_stale == 0", mark=("#d62728", "X"), row_words=stale_words),
    Kind("compaction_resurrected", rows.compaction_resurrected, distinct("topic", "key"),
         "a key whose last acked write is a tombstone, older than delete.retention.ms when "
         "read and below the cleaner's checkpoint, of which the compacted log still holds "
         "an older value",
         "deleted keys on {tp} came back with an older value after compaction",
         "compaction_resurrected == 0", mark=("#9467bd", "D"), row_words=resurrected_words),
)
