"""Exact anomaly counts on hand-built histories, one case per topic.

All cases live in one history (one verify run, so the suite stays fast); every
rule keys on topic, producer, record_id or group, and each case uses its own
topic, producer names and groups, so the cases cannot see each other. Each
test reads the anomaly rows Spark wrote for its topic and counts them with the
spec's rule.
"""
from __future__ import annotations

import json

import pyarrow.parquet as pq
import pytest
from histories import T0, History

from families import FAMILIES, by_name
from verifiers.expectations import ExpectationSet, parse_expectation
from verifiers.judgement import Judgement

NO_HTML = Judgement.without_model("unknown: a synthetic history", html=False)

pytestmark = pytest.mark.spark

# Which column names a row's topic, per kind (never-sent records have no produced topic).
# the casebook is of the records and transactions families' kinds (the share family's
# have their own: test_share_checker.py)
KINDS = tuple(k.name for f in FAMILIES if f.name in ("records", "transactions") for k in f.kinds)
TOPIC_COL = {"lost": "topic", "overwritten": "topic", "duplicate": "topic",
             "reordered": "pos_topic", "unexpected": "pos_topic", "divergent": "topic",
             "aborted_read": "pos_topic", "torn_transaction": "topic", "skipped": "topic",
             "redelivered": "topic",
             "recovered": "topic", "poll_skip": "topic", "nonmonotonic_poll": "topic"}

S = 1_000_000

EXPECTED: dict[str, dict[str, int]] = {}


def case(topic: str, **expected: int):
    EXPECTED[topic] = expected
    return topic


def clean(h: History, t: str) -> None:
    """Three acked records, read in run and by the drain, committed: no anomaly."""
    for i in range(3):
        rid = h.send(t, "clean-p", i, offset=i)
        h.consume(t, 0, i, rid)
        h.drain(t, 0, i, rid)
    h.commit(t, 0, 3)


def build(h: History) -> None:
    clean(h, case("clean"))

    # lost: an acked record nobody consumed; one consumed only in run is not lost.
    t = case("lost", lost=1)
    r = [h.send(t, "lost-p", i, offset=i) for i in range(3)]
    h.consume(t, 0, 0, r[0])
    h.drain(t, 0, 0, r[0])
    h.consume(t, 0, 2, r[2])                      # the drain missed it: still consumed
    h.commit(t, 0, 1)

    # overwritten: p-1 acked at 1 but the log holds q-0 there (truncation, then re-acked).
    t = case("overwritten", overwritten=1, lost=1)
    a = h.send(t, "ow-p", 0, offset=0)
    b = h.send(t, "ow-p", 1, offset=1)
    c = h.send(t, "ow-q", 0, offset=1)
    h.drain(t, 0, 0, a)
    h.drain(t, 0, 1, c)
    del b

    # two records acked at the same offset (a truncated leader acked one of them);
    # the log holds a there, so only b is overwritten. a is also read at 0 by a run
    # consumer and b nowhere: b is lost too. c, read at its own offset only, is fine.
    t = case("ow_same_offset", overwritten=1, lost=1)
    a = h.send(t, "ows-p", 0, offset=0)
    b = h.send(t, "ows-q", 0, offset=0)
    c = h.send(t, "ows-p", 1, offset=1)
    h.consume(t, 0, 0, a)
    h.drain(t, 0, 0, a)
    h.drain(t, 0, 1, c)
    del b

    # overwritten by a foreign payload (null record_id) — also a lost record.
    t = case("ow_foreign", overwritten=1, lost=1)
    h.send(t, "owf-p", 0, offset=0)
    h.drain(t, 0, 0, None)

    # a record duplicated and also reordered: p-2 is written at 1 (before p-1 at 2)
    # and again at 3 by a retry. Position of p-2 = the drain's first, offset 1 < 2.
    t = case("dup_reorder", duplicate=1, reordered=1)
    r = [h.send(t, "dr-p", i, offset=o) for i, o in enumerate((0, 2, 1))]
    h.drain(t, 0, 0, r[0])
    h.drain(t, 0, 1, r[2])
    h.drain(t, 0, 2, r[1])
    h.drain(t, 0, 3, r[2])

    # the position is the *first* drain copy: p-1 at 2 and 5, p-2 at 3 → not reordered.
    t = case("dup_position", duplicate=1)
    r = [h.send(t, "dp-p", i, offset=o) for i, o in enumerate((0, 2, 3))]
    for off, rid in ((0, r[0]), (2, r[1]), (3, r[2]), (5, r[1])):
        h.drain(t, 0, off, rid)

    # without a drain copy the position is the first one any consumer saw: c1 saw
    # p-1 at 4 before c0 saw it at 1, so p-1 sits at 4 and p-2 (at 3) is reordered.
    t = case("first_seen", duplicate=1, reordered=1)
    r = [h.send(t, "fs-p", i, offset=o) for i, o in enumerate((0, 1, 3))]
    h.drain(t, 0, 0, r[0])
    h.drain(t, 0, 3, r[2])
    h.consume(t, 0, 4, r[1], consumer="c1", group="fs-g1", ts=T0 + 1)
    h.consume(t, 0, 1, r[1], consumer="c0", group="fs-g0", ts=T0 + 2)

    # reordered counts records below the highest offset of *any* earlier seq on the
    # partition: p-0 at 5, p-1 at 3, p-2 at 4 → p-1 and p-2. Other partitions are apart.
    t = case("reordered", reordered=2)
    for i, o in enumerate((5, 3, 4)):
        h.drain(t, 0, o, h.send(t, "ro-p", i, offset=o))
    h.drain(t, 1, 9, h.send(t, "ro-q", 0, partition=1, offset=9))
    h.drain(t, 0, 0, h.send(t, "ro-q", 1, partition=0, offset=0))

    # unexpected: never sent, and failed outside a transaction. An aborted
    # transactional record read by a read_uncommitted consumer is neither.
    t = case("unexpected", unexpected=2)
    h.drain(t, 0, 0, "ghost-0")
    f = h.send(t, "ux-p", 0, status="failed", error="MSG_SIZE_TOO_LARGE")
    h.drain(t, 0, 1, f)
    x = h.send(t, "ux-tx", 0, status="failed", txn=("tx", 0, "aborted"))
    h.consume(t, 0, 2, x, group="ux-g", isolation="read_uncommitted")
    h.drain(t, 0, 2, x)

    # aborted transaction read by read_uncommitted (fine) and read_committed (aborted_read).
    t = case("aborted_ru")
    x = h.send(t, "ar-tx", 0, status="failed", txn=("tx-ru", 0, "aborted"))
    h.consume(t, 0, 0, x, group="ar-ru", isolation="read_uncommitted")
    t = case("aborted_rc", aborted_read=1)
    y = h.send(t, "ac-tx", 0, status="failed", txn=("tx-rc", 0, "aborted"))
    z = h.send(t, "ac-tx", 1, txn=("tx-rc", 1, "committed"), offset=2)
    h.consume(t, 0, 0, y, group="ac-rc", isolation="read_committed")
    h.consume(t, 0, 2, z, group="ac-rc", isolation="read_committed")
    h.drain(t, 0, 2, z, isolation="read_committed")

    build_torn_cases(h)

    # divergent: two consumers saw different records at offset 0, and at offset 2
    # one saw a foreign payload. a (acked at 0) and d (acked at 2) are overwritten;
    # b was also read at its own offset 1, so it is a duplicate.
    t = case("divergent", divergent=2, overwritten=2, duplicate=1)
    a = h.send(t, "dv-p", 0, offset=0)
    b = h.send(t, "dv-p", 1, offset=1)
    d = h.send(t, "dv-p", 2, offset=2)
    h.consume(t, 0, 0, a, consumer="c0", group="dv-g0")
    h.consume(t, 0, 0, b, consumer="c1", group="dv-g1", ts=T0 + 1)
    h.consume(t, 0, 2, None, consumer="c1", group="dv-g1")
    h.drain(t, 0, 0, a)
    h.drain(t, 0, 1, b)
    h.drain(t, 0, 2, d)

    # indeterminate records: consumed → recovered; never consumed → nothing.
    t = case("indeterminate", recovered=1)
    i0 = h.send(t, "in-p", 0, status="indeterminate", partition=None, error="_MSG_TIMED_OUT")
    h.send(t, "in-p", 1, status="indeterminate", partition=None, ack_ts=None)
    h.drain(t, 0, 0, i0)

    # skipped: g0 committed 5 but received only 0, 1, 3 of the drain's 0..4.
    # A refused commit and a commit by the drain consumer do not count; g1 is fine.
    t = case("skipped", skipped=2)
    r = [h.send(t, "sk-p", i, offset=i) for i in range(5)]
    for i in range(5):
        h.drain(t, 0, i, r[i])
    for i in (0, 1, 3):
        h.consume(t, 0, i, r[i], group="sk-g0")
    h.commit(t, 0, 5, group="sk-g0")
    h.consume(t, 0, 0, r[0], group="sk-g1", consumer="c9")
    h.commit(t, 0, 1, group="sk-g1", consumer="c9")
    h.commit(t, 0, 5, group="sk-g1", consumer="c9", ok=False)
    h.commit(t, 0, 5, group="sk-g2", consumer="drain")

    # an aborted record the drain saw: a read_committed group committing past it did
    # not skip it; a read_uncommitted one did.
    t = case("skipped_aborted", skipped=1)
    x = h.send(t, "sa-tx", 0, status="failed", txn=("tx-sa", 0, "aborted"))
    c = h.send(t, "sa-tx", 1, txn=("tx-sa", 1, "committed"), offset=1)
    h.drain(t, 0, 0, x)
    h.drain(t, 0, 1, c)
    h.consume(t, 0, 1, c, group="sa-rc", isolation="read_committed")
    h.commit(t, 0, 2, group="sa-rc")
    h.consume(t, 0, 1, c, group="sa-ru", isolation="read_uncommitted")
    h.commit(t, 0, 2, group="sa-ru")

    # redelivered: k − 1 extra deliveries per position and group, in run only.
    t = case("redelivered", redelivered=3)
    r = [h.send(t, "rd-p", i, offset=i) for i in range(2)]
    for _ in range(3):
        h.consume(t, 0, 0, r[0], group="rd-g0")
    for _ in range(2):
        h.consume(t, 0, 1, r[1], group="rd-g0")
    h.consume(t, 0, 0, r[0], group="rd-g1")
    h.consume(t, 0, 0, r[0], group=None, consumer="assign")
    h.consume(t, 0, 0, r[0], group=None, consumer="assign")
    h.drain(t, 0, 0, r[0])
    h.drain(t, 0, 0, r[0])
    h.drain(t, 0, 1, r[1])

    # a duplicate delivered to one group once at each of its positions is not
    # redelivered; a second delivery at one of them is (one extra).
    t = case("dup_deliveries", duplicate=2, redelivered=1)
    r = [h.send(t, "dd-p", i, offset=i) for i in range(2)]
    for rid, offs in ((r[0], (0, 2)), (r[1], (1, 3))):
        for off in offs:
            h.consume(t, 0, off, rid, group="dd-g")
            h.drain(t, 0, off, rid)
    h.consume(t, 0, 3, r[1], group="dd-g")

    # two members of one group read different records at offset 0: a divergent
    # offset delivered twice to the group (one extra); a is overwritten, b (also at
    # its own offset 1) a duplicate.
    t = case("divergent_group", divergent=1, overwritten=1, duplicate=1, redelivered=1)
    a = h.send(t, "dg-p", 0, offset=0)
    b = h.send(t, "dg-p", 1, offset=1)
    h.consume(t, 0, 0, a, consumer="c0", group="dg-g")
    h.consume(t, 0, 0, b, consumer="c1", group="dg-g")
    h.drain(t, 0, 0, a)
    h.drain(t, 0, 1, b)

    # three consumers saw three records at offset 0. The positions view names the
    # lowest and the highest record there (a, c); b, the third, is a duplicate only
    # because of its own offset 1, which the position path must fetch too.
    t = case("three_at_one", divergent=1, overwritten=1, duplicate=2)
    r = [h.send(t, "t3-p", i, offset=i) for i in range(3)]
    for i in range(3):
        h.consume(t, 0, 0, r[i], consumer=f"c{i}", group=f"t3-g{i}")
    for i in range(3):
        h.drain(t, 0, i, r[i])

    # three records acked at offset 0 (two truncations); the log holds the middle one.
    t = case("three_acked_at_one", overwritten=2, lost=2)
    r = [h.send(t, "t3a-p", i, offset=0) for i in range(3)]
    h.drain(t, 0, 0, r[1])

    # a group that committed without receiving anything skipped every drained offset
    # below its commit.
    t = case("skipped_silent", skipped=2)
    for i in range(3):
        h.drain(t, 0, i, h.send(t, "ss-p", i, offset=i))
    h.commit(t, 0, 2, group="ss-g", consumer="c7")

    # four groups commit past the drain's 0..2: offset 0 reached all four, 1 all but
    # g2, 2 only g1 and g3. With more than two groups at an offset, the groups view
    # must still find who was missed (reconcile._groups keeps the lowest and highest
    # group hash per offset only).
    t = case("skipped_many_groups", skipped=3)
    r = [h.send(t, "mg-p", i, offset=i) for i in range(3)]
    for i in range(3):
        h.drain(t, 0, i, r[i])
    for off, groups in ((0, (0, 1, 2, 3)), (1, (0, 1, 3)), (2, (1, 3))):
        for g in groups:
            h.consume(t, 0, off, r[off], group=f"mg-g{g}", consumer=f"mg-c{g}")
    for g in range(4):
        h.commit(t, 0, 3, group=f"mg-g{g}", consumer=f"mg-c{g}")

    build_poll_cases(h)

    # unavailability and recovery: partition 0 of "unavail" is acked at 0 s and 0.5 s;
    # sends at 1 s and 1.5 s wait until 4 s. A fault at 1.2 s (healed at 3.5 s) moves
    # its leader: the window open at 1.2 s ends at 4 s, 2.8 s after the injection.
    # Partition 1's first ack comes 2 s after its first send: start-up, no window.
    t = case("unavail")
    base = T0 + 100 * S
    for i, (s, a) in enumerate(((0, 0.01), (0.5, 0.51), (1.0, 4.0), (1.5, 4.0), (4.1, 4.11))):
        rid = h.send(t, "ua-p", i, offset=i, send_ts=base + int(s * S), ack_ts=base + int(a * S))
        h.drain(t, 0, i, rid)
    h.event("fault", "pause", base + int(1.2 * S), "kafka-1",
            json.dumps({"fault_id": "f-ua", "partitions": [{"topic": t, "partition": 0}]}))
    h.event("heal", "pause", base + int(3.5 * S), "kafka-1", json.dumps({"fault_id": "f-ua"}))
    h.event("observe", "leader", base + int(2 * S), "kafka-2",
            json.dumps({"topic": t, "partition": 0, "leader": 2, "isr": [2, 3]}))
    for i, (s, a) in enumerate(((0, 2.0), (2.1, 2.11))):
        rid = h.send(t, "ua-q", i, partition=1, offset=i, send_ts=base + int(s * S),
                     ack_ts=base + int(a * S))
        h.drain(t, 1, i, rid)
    # ISR: partition 0 short from 2 s to 4.5 s, partition 1 from 2.05 s to 5 s, so the
    # fault touched both; partition 1's send at 2.1 s was acked (2.11 s) inside it.
    for p, (short, full, isr) in enumerate(((2.0, 4.5, [2, 3]), (2.05, 5.0, [1, 2]))):
        for ts, members in ((short, isr), (full, [1, 2, 3])):
            h.event("observe", "isr", base + int(ts * S), None, json.dumps(
                {"topic": t, "partition": p, "isr": members, "replicas": [1, 2, 3]}))

    # explained: a record acked by kafka-3 (leader since 0.5 s) while f-ua was active,
    # then lost.
    t = case("lost_in_fault", lost=1)
    h.event("observe", "leader", base + int(0.5 * S), "kafka-3",
            json.dumps({"topic": t, "partition": 0, "leader": 3}))
    h.send(t, "lf-p", 0, offset=0, send_ts=base + int(1.3 * S), ack_ts=base + int(2.5 * S),
           acked_by=3)

    build_deposed_case(h)


def build_torn_cases(h: History) -> None:
    """torn_transaction, next to aborted_read and lost: transactions of tt-p in the log
    (read_committed drain) as KAFKA-17754 leaves them."""
    # txn 0 whole; txn 1 committed, its record at 4 never consumed (torn, and lost); txn 2
    # aborted, its first record committed with txn 3 (the delayed batch: torn, and an
    # aborted_read); txn 4 aborted and hidden: not torn.
    t = case("torn", torn_transaction=2, lost=1, aborted_read=1)
    tx = "tx-torn"
    plan = ((0, "committed", 0), (0, "committed", 1), (1, "committed", 3), (1, "committed", None),
            (2, "aborted", 6), (2, "aborted", None), (3, "committed", 8), (4, "aborted", None))
    for seq, (txn_seq, outcome, at) in enumerate(plan):
        acked = outcome == "committed"
        rid = h.send(t, "tt-p", seq, status="acked" if acked else "failed",
                     txn=(tx, txn_seq, outcome), offset=(at if at is not None else 4) if acked else None)
        if at is not None:
            h.drain(t, 0, at, rid, isolation="read_committed")
    # an aborted transaction wholly visible is aborted_read alone; one seen only by a
    # read_uncommitted consumer is nothing
    t = case("torn_not", aborted_read=2)
    for seq in range(2):
        rid = h.send(t, "tn-p", seq, status="failed", txn=("tx-tn", 0, "aborted"))
        h.drain(t, 0, seq, rid, isolation="read_committed")
    for seq in (2, 3):
        rid = h.send(t, "tn-p", seq, status="failed", txn=("tx-tn", 1, "aborted"))
        if seq == 2:
            h.consume(t, 0, seq, rid, group="tn-ru", isolation="read_uncommitted")


def build_deposed_case(h: History) -> None:
    """Who acknowledged a lost record: kafka-1 leads "deposed"-0 and is cut off from
    the other nodes at 201 s (fault f-dep, healed at 204 s) while clients still reach
    it. The controller elects kafka-2 at 201.8 s. kafka-1 acknowledges a record at
    201.5 s (still the elected leader), at 202.5 s (deposed) and at 204.5 s (after the
    heal, before it learns of kafka-2: still the fault's, within 10 s of the heal);
    all three are truncated when it rejoins. A record kafka-2 acknowledged at 203 s
    survives, at offset 0, in leader epoch 5: overwriting kafka-1's first record."""
    t = case("deposed", lost=3, overwritten=1)
    base = T0 + 200 * S
    h.event("observe", "leader", base + int(0.2 * S), "kafka-1",
            json.dumps({"topic": t, "partition": 0, "leader": 1}))
    h.event("fault", "partition", base + 1 * S, "kafka-1", json.dumps(
        {"fault_id": "f-dep", "label": "timeline[0] partition", "shape": "isolate"}))
    h.event("observe", "leader", base + int(1.8 * S), "kafka-2",
            json.dumps({"topic": t, "partition": 0, "leader": 2}))
    h.event("heal", "partition", base + 4 * S, "kafka-1", json.dumps({"fault_id": "f-dep"}))
    for seq, at in enumerate((1.5, 2.5, 4.5)):
        h.send(t, "dep-a", seq, offset=seq, send_ts=base + int((at - 0.1) * S),
               ack_ts=base + int(at * S), acked_by=1)
    survivor = h.send(t, "dep-b", 0, offset=0, send_ts=base + int(2.9 * S),
                      ack_ts=base + 3 * S, acked_by=2)
    h.drain(t, 0, 0, survivor)
    h.consume(t, 0, 0, survivor, leader_epoch=5)


def build_poll_cases(h: History) -> None:
    """poll_skip and nonmonotonic_poll: deliveries with (poll_seq, assignment)."""
    # a skip inside one assignment: offsets 0, 1, 3 received, 2 drained: skipped over.
    t = case("poll_skip", poll_skip=1)
    r = [h.send(t, "ps-p", i, offset=i) for i in range(4)]
    for n, i in enumerate((0, 1, 3)):
        h.consume(t, 0, i, r[i], consumer="ps-c", group="ps-g", poll=(n, 1))
    for i in range(4):
        h.drain(t, 0, i, r[i])

    # the same jump across a rebalance is not a skip: 0, 1 in generation 1, 3 in 2
    # (another member read 2 meanwhile).
    t = case("poll_rebalance")
    r = [h.send(t, "pr-p", i, offset=i) for i in range(4)]
    h.consume(t, 0, 0, r[0], consumer="pr-c", group="pr-g", poll=(0, 1))
    h.consume(t, 0, 1, r[1], consumer="pr-c", group="pr-g", poll=(1, 1))
    h.consume(t, 0, 2, r[2], consumer="pr-d", group="pr-g", poll=(0, 1))
    h.consume(t, 0, 3, r[3], consumer="pr-c", group="pr-g", poll=(2, 2))
    for i in range(4):
        h.drain(t, 0, i, r[i])

    # an aborted record at offset 1 (the drain, read_uncommitted, saw it): a
    # read_committed consumer jumping over it did not skip; a read_uncommitted one did.
    t = case("poll_aborted", poll_skip=1)
    a = h.send(t, "pa-tx", 0, txn=("tx-pa", 0, "committed"), offset=0)
    x = h.send(t, "pa-tx", 1, status="failed", txn=("tx-pa", 1, "aborted"))
    b = h.send(t, "pa-tx", 2, txn=("tx-pa", 2, "committed"), offset=2)
    for c, iso in (("pa-rc", "read_committed"), ("pa-ru", "read_uncommitted")):
        h.consume(t, 0, 0, a, consumer=c, group=c, isolation=iso, poll=(0, 1))
        h.consume(t, 0, 2, b, consumer=c, group=c, isolation=iso, poll=(1, 1))
    h.drain(t, 0, 0, a)
    h.drain(t, 0, 1, x)
    h.drain(t, 0, 2, b)

    # a re-read after a rebalance is not nonmonotonic (0..2, then 1..3 in generation
    # 2; the group got 1 and 2 twice); going back inside one generation is.
    t = case("poll_reread", redelivered=2)
    r = [h.send(t, "rr-p", i, offset=i) for i in range(4)]
    for n, i in enumerate((0, 1, 2)):
        h.consume(t, 0, i, r[i], consumer="rr-c", group="rr-g", poll=(n, 1))
    for n, i in enumerate((1, 2, 3)):
        h.consume(t, 0, i, r[i], consumer="rr-c", group="rr-g", poll=(3 + n, 2))
    for i in range(4):
        h.drain(t, 0, i, r[i])
    t = case("poll_back", nonmonotonic_poll=2, redelivered=2)
    r = [h.send(t, "pb-p", i, offset=i) for i in range(3)]
    for n, i in enumerate((0, 1, 2, 1, 2)):      # back to 1, then 2 again: two went back
        h.consume(t, 0, i, r[i], consumer="pb-c", group="pb-g", poll=(n, 4))
    for i in range(3):
        h.drain(t, 0, i, r[i])


class _NullHistory(History):
    def __init__(self):  # noqa: D107 - only records the expectations
        self.clock = T0

    def send(self, *a, **k):
        return "x"

    def consume(self, *a, **k):
        pass

    drain = commit = event = consume


build(_NullHistory())   # fill EXPECTED at import, so parametrize sees every case


@pytest.fixture(scope="module")
def verified(tmp_path_factory, request):
    """(run dir, summary) of the casebook, verified once per test session: xdist
    workers share one directory and a lock, so only the first pays for Spark."""
    import fcntl
    import os

    from verifiers.verify import verify_run

    base = tmp_path_factory.getbasetemp()
    # under xdist each worker's basetemp is a child of the session's
    shared = (base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base) / "casebook"
    shared.mkdir(exist_ok=True)
    with open(shared / ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        done = shared / "run" / "report" / "summary.json"
        if not done.exists():
            run = shared / "run"
            h = History(run)
            build(h)
            h.close()
            exps = ExpectationSet(tuple(parse_expectation(s)
                                        for s in ("lost == 0", "skipped == 0")))
            verify_run(str(run), Judgement.without_model("unknown: a casebook").with_expectations(exps),
                       spark=request.getfixturevalue("spark"))
    return shared / "run", json.loads(done.read_text())


def counts_for(run, topic: str) -> dict[str, int]:
    """Each kind's count (by the kind's rule) over its written rows of one topic."""
    import pyarrow.compute as pc

    from spark_reports.anomaly_output import count

    out = {}
    for kind in KINDS:
        rows = pq.read_table(run / "report" / "anomalies" / kind)
        out[kind] = count(rows.filter(pc.equal(rows[TOPIC_COL[kind]], topic)), by_name(kind))
    return out


@pytest.mark.parametrize("topic", list(EXPECTED))
def test_case_counts(verified, topic):
    run, _ = verified
    want = {k: EXPECTED[topic].get(k, 0) for k in KINDS}
    assert counts_for(run, topic) == want


def test_summary_totals_are_the_sum_of_the_cases(verified):
    _, summary = verified
    totals = {k: sum(e.get(k, 0) for e in EXPECTED.values()) for k in KINDS}
    assert {k: summary["anomalies"][k] for k in KINDS} == totals
    # a history without share groups: the share family's kinds are counted, and none
    assert not any(v for k, v in summary["anomalies"].items() if k not in KINDS)


def test_aborted_records_read_uncommitted_in_run_are_counted_not_judged(verified):
    # ux-tx, ar-tx and tx-tn (torn_not) were read by read_uncommitted groups in `run`;
    # ac-tx's aborted record only by read_committed (aborted_read); drain copies do not count
    _, summary = verified
    assert summary["counts"]["aborted_seen_uncommitted"] == 3


def test_acked_records_read_in_run_but_gone_from_the_final_log_are_counted(verified):
    # lost-p-2 ("the drain missed it: still consumed", so not lost) and fs-p-1 (read by
    # two groups, never drained): what an unclean election leaves when nothing is
    # written over the truncated offsets (claim 4)
    _, summary = verified
    assert summary["counts"]["acked_truncated"] == 2


def test_verdict_names_each_failure(verified):
    _, summary = verified
    assert summary["verdict"]["status"] == "failed"
    lost, skipped = (sum(e.get(k, 0) for e in EXPECTED.values()) for k in ("lost", "skipped"))
    assert summary["verdict"]["failures"] == [f"lost: {lost} > 0", f"skipped: {skipped} > 0"]


def test_unavailability_window_and_recovery(verified):
    _, summary = verified
    m = summary["metrics"]
    windows = [w for w in m["unavailability"] if w["topic"] == "unavail"]
    assert windows == [{"topic": "unavail", "partition": 0, "start_us": T0 + 101 * S,
                        "end_us": T0 + 104 * S, "seconds": 3.0, "ended_by_ack": True,
                        "fault_id": "f-ua"}]
    rec = [r for r in m["recovery"] if r["fault_id"] == "f-ua"]
    assert len(rec) == 1
    assert rec[0]["seconds"] == pytest.approx(2.8)
    assert rec[0]["after_heal_s"] == pytest.approx(0.5)
    assert rec[0]["unavailable_s"] == pytest.approx(3.0)
    assert rec[0]["partitions_from"] == "leader/ISR changes observed"
    assert list(rec[0]["partitions"]) == ["unavail-0", "unavail-1"]
    assert rec[0]["partitions"]["unavail-1"]["seconds"] == 0.0    # its 2 s were start-up
    fw = [f for f in m["fault_windows"] if f["fault_id"] == "f-ua"][0]
    # sent inside the fault on a touched partition and acked before its heal: 2.1 s
    # (acked 2.11 s); not 1.5 s (acked after the heal) nor 1.3 s (an untouched partition)
    assert fw["acked_during"] == 1
    [isr] = [f for f in m["isr"] if f["fault_id"] == "f-ua"]
    assert isr["shrunk_s"] == pytest.approx(0.8)
    assert isr["restored_after_heal_s"] == pytest.approx(1.5)
    # the sends at 1.3 s (2.5 s), 1.5 s (4 s) and 2.1 s (2.11 s) are inside the fault
    assert fw["ack_latency_ms"]["n"] == 3
    assert fw["ack_latency_ms"]["p50"] == pytest.approx(1200.0, rel=1e-3)
    assert fw["ack_latency_ms"]["max"] == pytest.approx(2500.0)


def test_anomaly_rows_say_who_acked_them_and_which_fault_was_active(verified):
    run, summary = verified
    rows = pq.read_table(run / "report" / "anomalies" / "lost").to_pylist()
    mine = [r for r in rows if r["topic"] == "lost_in_fault"]
    assert [(r["leader_at_ack"], r["elected_leader_at_ack"], r["faults_at_ack"], r["fault_id"])
            for r in mine] == [(3, 3, ["f-ua"], "f-ua")]
    others = [r for r in rows if r["topic"] not in ("lost_in_fault", "deposed")]
    assert others and all(r["faults_at_ack"] == [] and r["fault_id"] == "none" for r in others)
    by_fault = summary["anomalies_by_fault"]
    assert by_fault["f-ua"] == {"lost": 1}
    assert by_fault["f-dep"] == {"lost": 3, "overwritten": 1}
    assert by_fault["none"]["lost"] == summary["anomalies"]["lost"] - 4
    # every kind's counts over the faults add up to its total
    for kind, n in summary["anomalies"].items():
        assert sum(f.get(kind, 0) for f in by_fault.values()) == n, kind
    # redelivered rows name no acknowledged record: charged by when the group got them
    assert by_fault["none"]["redelivered"] == summary["anomalies"]["redelivered"]
    # a skipped offset is explained by the ack of the record the drain saw there
    skipped = pq.read_table(run / "report" / "anomalies" / "skipped").to_pylist()
    assert all(r["ack_ts_us"] is not None and r["faults_at_ack"] == [] for r in skipped
               if r["topic"] == "skipped")


def test_a_deposed_leaders_acks_are_its_own_and_charged_to_the_fault_that_deposed_it(verified):
    """Each lost or overwritten row names the broker that acknowledged it (acked_by) and
    the one the controller had elected; the acks after the heal are still the fault's."""
    run, summary = verified

    def rows(kind):
        return [r for r in pq.read_table(run / "report" / "anomalies" / kind).to_pylist()
                if r["topic"] == "deposed"]
    got = sorted((r["record_id"], r["leader_at_ack"], r["elected_leader_at_ack"],
                  r["faults_at_ack"], r["fault_id"]) for r in rows("lost"))
    assert got == [("dep-a-0", 1, 1, ["f-dep"], "f-dep"),      # before the election
                   ("dep-a-1", 1, 2, ["f-dep"], "f-dep"),      # deposed, during the fault
                   ("dep-a-2", 1, 2, [], "f-dep")]             # deposed, after the heal
    # one row per delivery at its offset: the drain's (no epoch given here) and c0's
    over = {(r["record_id"], r["consumed_record_id"], r["consumed_by"], r["consumed_leader_epoch"])
            for r in rows("overwritten")}
    assert over == {("dep-a-0", "dep-b-0", "drain", None), ("dep-a-0", "dep-b-0", "c0", 5)}
    deposed = [g for g in summary["anomaly_explanations"]["lost"] if g["topic"] == "deposed"]
    assert sorted((g["leader"], g["elected_leader"], g["fault_id"], g["count"])
                  for g in deposed) == [(1, 1, "f-dep", 1), (1, 2, "f-dep", 2)]
    [o] = [g for g in summary["anomaly_explanations"]["overwritten"] if g["topic"] == "deposed"]
    assert o["surviving_leader_epochs"] == [5]


def test_a_torn_transaction_names_the_transaction_that_committed_its_record(verified):
    run, _ = verified
    rows = [r for r in pq.read_table(run / "report" / "anomalies" / "torn_transaction").to_pylist()
            if r["topic"] == "torn"]
    assert sorted((r["txn_seq"], r["record_id"], r["visible"]) for r in rows) == [
        (1, "tt-p-2", True), (1, "tt-p-3", False), (2, "tt-p-4", True), (2, "tt-p-5", False)]
    words = sorted(r["explanation"] for r in rows if r["explanation"])
    assert words == [
        "record tt-p-3 of committed transaction 1 was never consumed (1 of its 2 records were)",
        "record tt-p-4 of aborted transaction 2 was committed with transaction 3 at torn-0 offset 6"]


def test_poll_checks_say_how_many_deliveries_they_left_out(verified):
    run, summary = verified
    run_rows = pq.read_table(run / "history" / "consumed",
                             columns=["phase", "poll_seq"]).to_pylist()
    without = sum(1 for r in run_rows if r["phase"] == "run" and r["poll_seq"] is None)
    assert without > 0
    assert summary["poll_checks"]["left_out"] == without


def test_duckdb_reference_agrees(verified):
    """The independent SQL implementation (benchmarks/) gives the same numbers."""
    pytest.importorskip("duckdb")
    import importlib.util
    from pathlib import Path

    path = Path(__file__).resolve().parents[3] / "benchmarks" / "duckdb_reference.py"
    spec = importlib.util.spec_from_file_location("duckdb_reference", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    run, summary = verified
    ref = mod.reference_counts(str(run), threads=1)
    assert ref["anomalies"] == {k: summary["anomalies"][k] for k in ref["anomalies"]}
    assert set(ref["anomalies"]) == set(KINDS)
    assert ref["counts"] == {k: summary["counts"][k] for k in ref["counts"]}


def rows_of(run, kind: str) -> list:
    """Every anomaly row of a kind, in a canonical order."""
    return sorted(map(repr, pq.read_table(run / "report" / "anomalies" / kind).to_pylist()))


def test_run_id_comes_from_the_history(verified):
    _, summary = verified
    assert summary["run_id"] == "cases"



def test_fault_windows_without_the_plain_test_give_the_same_metrics(verified, spark, tmp_path,
                                                                     monkeypatch):
    """Beyond PLAIN_TESTS_MAX faults the windows are not prefiltered by a plain test
    (the higher-order functions see every row): same metrics."""
    import shutil

    import families.records.throughput as throughput
    from verifiers.verify import verify_run

    run, summary = verified
    assert summary["metrics"]["fault_windows"] and summary["metrics"]["recovery"]
    shutil.copytree(run / "history", tmp_path / "history")
    monkeypatch.setattr(throughput, "PLAIN_TESTS_MAX", 0)
    again = verify_run(str(tmp_path), NO_HTML, spark=spark)
    assert again.summary["metrics"] == summary["metrics"]


def test_kinds_written_by_spark_are_counted_and_explained_alike(verified, spark, tmp_path,
                                                                monkeypatch):
    """A kind with more rows than the driver writes is written by Spark and counted from
    the files: the same counts, per fault too, and the same explanations."""
    import shutil

    import spark_reports.anomaly_output as out
    from verifiers.verify import verify_run

    run, summary = verified
    shutil.copytree(run / "history", tmp_path / "history")
    monkeypatch.setattr(out, "DRIVER_WRITE_MAX_ROWS", 1)
    again = verify_run(str(tmp_path), NO_HTML, spark=spark).summary
    for key in ("anomalies", "anomalies_by_fault", "anomaly_explanations"):
        assert again[key] == summary[key], key
    for topic in EXPECTED:
        assert counts_for(tmp_path, topic) == counts_for(run, topic)


def test_a_kind_without_rows_is_written_with_the_columns_of_one_with_rows(verified, spark,
                                                                          tmp_path):
    """A passing run's kinds are known to be empty and written from their schema alone
    (no job): with the same columns and types as the casebook's, where every kind has
    rows."""
    from verifiers.verify import verify_run

    run, summary = verified
    h = History(tmp_path / "clean")
    clean(h, "clean")
    h.close()
    passing = verify_run(str(tmp_path / "clean"), NO_HTML, spark=spark).summary
    assert not any(passing["anomalies"].values())

    def schema(run_dir, kind):
        return pq.read_schema(run_dir / "report" / "anomalies" / kind / "part-00000.parquet")

    for kind in KINDS:
        assert summary["anomalies"][kind], kind
        assert schema(tmp_path / "clean", kind) == schema(run, kind), kind
