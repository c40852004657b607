"""Synthetic run histories with injected anomalies of every kind.

`generate(run_dir, SyntheticSpec(...))` writes a history in the contract's
format (the same schemas as core.history, part files of `chunk_rows` rows)
and returns the exact anomaly counts the spec's rules give for it, so tests
and benchmarks can compare a reconciler against ground truth. Everything is
numpy/pyarrow-vectorised: 10 M records take well under a minute.

The run: `producers` idempotent producers p0… send round-robin at `rate_per_s`
to `partitions` partitions of one topic; producer i's seq s goes to partition
(s + i) mod K, so its consecutive records on a partition are K seqs apart. A
transactional producer tx0 interleaves batches, some aborted. Group g0
(read_committed, one consumer per partition slot) consumes every committed
record in `run` and commits as it goes; the drain (read_committed) reads every
committed record after the run. `faults` faults each stall one partition for
`fault_seconds` (its sends are acked only at the heal), which shows up as an
unavailability window.

Each injected anomaly uses its own records (disjoint), and injected records
that need a producer of their own get one (pw, pfail, pdiv, prec) so that no
injection creates a reorder by accident. Injections and their effects:

  lost          an acked record is consumed by nobody               lost +1
  overwritten   an acked record's offset holds a pw record instead  overwritten +1, lost +1
  duplicate     an acked record is also consumed at a later offset  duplicate +1
  reordered     two consecutive records of one producer and
                partition swap offsets                              reordered +1
  unexpected    a consumed "ghost-k" that was never sent            unexpected +1
  unexpected_failed  a `failed` non-transactional pfail record
                is consumed                                         unexpected +1
  divergent     consumer c-div (group g-div) sees an indeterminate
                pdiv record at an acked record's offset             divergent +1, overwritten +1,
                                                                    recovered +1
  aborted_read  g0 (read_committed) receives a record of an
                aborted transaction                                 aborted_read +1
                (and torn_transaction +1 per aborted transaction
                read in part, not whole)
  skipped       g0 never receives an acked record, commits past it  skipped +1
  redelivered   g0 receives a position a second time                redelivered +1
  recovered     an indeterminate prec record is consumed            recovered +1
"""
from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import yaml

from core.history import SCHEMAS

INJECTABLE = ("lost", "overwritten", "duplicate", "reordered", "unexpected",
              "unexpected_failed", "divergent", "aborted_read", "skipped", "redelivered",
              "recovered")

ACKED, FAILED, INDET = 0, 1, 2
STATUS = np.array(["acked", "failed", "indeterminate"], dtype=object)
RUN, DRAIN = 0, 1


@dataclass(frozen=True)
class SyntheticSpec:
    records: int = 10_000              # records of the idempotent producers p0…
    producers: int = 4
    partitions: int = 6
    topic: str = "t"
    rate_per_s: float = 5_000.0
    failed_fraction: float = 0.001     # plain failures, never consumed
    indeterminate_fraction: float = 0.001
    txn_records: int | None = None     # default records // 50
    txn_batch: int = 10
    aborted_txn_fraction: float = 0.1
    faults: int = 2
    fault_seconds: float = 3.0
    inject: dict = field(default_factory=dict)   # kind -> how many (see INJECTABLE)
    seed: int = 7
    chunk_rows: int = 1_000_000
    run_id: str = "synthetic"
    write_scenario: bool = True

    def n(self, kind: str) -> int:
        if kind not in INJECTABLE:
            raise ValueError(f"unknown injection {kind!r}; use {INJECTABLE}")
        return int(self.inject.get(kind, 0))


def expected_anomalies(spec: SyntheticSpec) -> dict[str, int]:
    n = spec.n
    return {
        "lost": n("lost") + n("overwritten"),
        "overwritten": n("overwritten") + n("divergent"),
        "duplicate": n("duplicate"),
        "reordered": n("reordered"),
        "unexpected": n("unexpected") + n("unexpected_failed"),
        "divergent": n("divergent"),
        "aborted_read": n("aborted_read"),
        # the aborted transactions partly read (generate() counts them from its draw)
        "torn_transaction": 0,
        "skipped": n("skipped"),
        "redelivered": n("redelivered"),
        "recovered": n("recovered") + n("divergent"),
        # the consumed rows carry no poll_seq or assignment: nothing is judged
        "poll_skip": 0,
        "nonmonotonic_poll": 0,
    }


class _Cols:
    """Column arrays accumulated in pieces, concatenated once."""

    def __init__(self, names):
        self.parts = {k: [] for k in names}

    def add(self, **cols):
        n = len(next(iter(cols.values())))
        for k in self.parts:
            v = cols.get(k)
            self.parts[k].append(np.full(n, -1, dtype=np.int64) if v is None
                                 else np.asarray(v, dtype=np.int64))

    def done(self) -> dict[str, np.ndarray]:
        return {k: (np.concatenate(v) if v else np.zeros(0, np.int64)) for k, v in self.parts.items()}


# Producer name table: p0..p{P-1}, then these, in this order (their ids follow p{P-1}).
EXTRA_PRODUCERS = ("tx0", "pw", "pfail", "pdiv", "prec", "ghost")


@dataclass(frozen=True)
class _Timeline:
    """The run's clock, in µs since the epoch."""
    t0: int                 # the first send
    interval: float         # between two sends of p0…
    duration_us: int        # the load phase
    drain_start: int

    @classmethod
    def of(cls, spec: SyntheticSpec) -> _Timeline:
        interval = 1_000_000 / spec.rate_per_s
        t0 = 1_700_000_000_000_000
        duration_us = int(spec.records * interval)
        return cls(t0, interval, duration_us, t0 + duration_us + 10_000_000)


@dataclass
class _Sends:
    """One producer's (or a set of producers') records, one array element each."""
    prod: np.ndarray | None
    seq: np.ndarray
    part: np.ndarray
    send: np.ndarray
    ack: np.ndarray
    status: np.ndarray | None = None      # p0… only; every tx0 record is logged
    txn: np.ndarray | None = None         # tx0 only: txn_seq
    aborted: np.ndarray | None = None     # tx0 only
    off: np.ndarray | None = None         # set by _assign_offsets


@dataclass(frozen=True)
class _Targets:
    """The disjoint acked records of p0… each injection uses (indices into them)."""
    lost: np.ndarray
    overwritten: np.ndarray
    duplicate: np.ndarray
    divergent: np.ndarray
    skipped: np.ndarray
    redelivered: np.ndarray


@dataclass(frozen=True)
class _Appended:
    """Injected records written at the end of their partitions' logs."""
    part: np.ndarray
    off: np.ndarray
    send: np.ndarray


class _LogEnds:
    """The next free offset of each partition."""

    def __init__(self, next_free: np.ndarray):
        self.next_free = next_free

    def alloc(self, parts: np.ndarray) -> np.ndarray:
        """Fresh offsets at the end of each record's partition, in the given order."""
        out = np.empty(len(parts), np.int64)
        for i, p in enumerate(parts):
            out[i] = self.next_free[p]
            self.next_free[p] += 1
        return out


def generate(run_dir: str | os.PathLike, spec: SyntheticSpec = SyntheticSpec()) -> dict:
    """Write the history; return {"anomalies": expected counts, "counts": {...}}."""
    # Every step draws from this one generator: the steps' order is the output's.
    rng = np.random.default_rng(spec.seed)
    run_dir = Path(run_dir)
    clock = _Timeline.of(spec)
    K = spec.partitions
    names = [f"p{i}" for i in range(spec.producers)] + list(EXTRA_PRODUCERS)
    ids = {name: i for i, name in enumerate(names)}

    plain = _idempotent_sends(spec, rng, clock)
    txn = _transactional_sends(spec, rng, clock)
    faults = _fault_windows(spec, clock)
    _stall_acks_in_faults(faults, rng, plain, txn)
    ends = _assign_offsets(plain, txn, K)
    targets = _choose_targets(spec, rng, plain)
    pfail = _appended(spec.n("unexpected_failed"), K, ends, clock.t0 + clock.duration_us // 2)
    prec = _appended(spec.n("recovered"), K, ends, clock.t0 + clock.duration_us // 3)
    produced = _produced_rows(ids, plain, txn, targets, pfail, prec)

    rows = _ConsumedRows(max(1, min(3, K)), rng, clock.drain_start)
    _consume_committed(rows, ids, plain, txn, targets)
    _consume_appended(rows, spec, ids, plain, targets, ends, pfail, prec, clock)
    torn = _consume_misdelivered(rows, spec, rng, ids, plain, txn, targets)
    consumed = rows.done()
    commits = _commit_rows(K, ends, clock)

    _write(run_dir, spec, names, produced, consumed, commits, faults, clock, rows.C)
    return {"anomalies": {**expected_anomalies(spec), "torn_transaction": torn},
            "counts": _counts(produced, consumed),
            "faults": [f[0] for f in faults]}


def _idempotent_sends(spec: SyntheticSpec, rng, clock: _Timeline) -> _Sends:
    """p0… send round-robin; producer i's seq s goes to partition (s + i) mod K."""
    N, P, K = spec.records, spec.producers, spec.partitions
    g = np.arange(N, dtype=np.int64)
    prod = g % P
    seq = g // P
    part = (seq + prod) % K
    send = clock.t0 + (g * clock.interval).astype(np.int64)
    u = rng.random(N)
    status = np.where(u < spec.failed_fraction, FAILED,
                      np.where(u < spec.failed_fraction + spec.indeterminate_fraction, INDET, ACKED))
    latency = (rng.lognormal(np.log(3000), 0.5, N)).astype(np.int64) + 200
    return _Sends(prod=prod, seq=seq, part=part, send=send, ack=send + latency, status=status)


def _transactional_sends(spec: SyntheticSpec, rng, clock: _Timeline) -> _Sends:
    """tx0: batches of `txn_batch` records spread over the run, some transactions aborted."""
    N, K = spec.records, spec.partitions
    M = spec.txn_records if spec.txn_records is not None else N // 50
    j = np.arange(M, dtype=np.int64)
    send = clock.t0 + ((j + 0.5) * (N / max(M, 1)) * clock.interval).astype(np.int64)
    part = j % K
    txn = j // spec.txn_batch
    n_txn = int(txn.max()) + 1 if M else 0
    n_aborted = min(n_txn, max(int(round(n_txn * spec.aborted_txn_fraction)),
                                -(-spec.n("aborted_read") // spec.txn_batch)))
    aborted_txn = np.zeros(n_txn, bool)
    aborted_txn[rng.choice(n_txn, n_aborted, replace=False)] = True
    aborted = aborted_txn[txn] if M else np.zeros(0, bool)
    latency = (rng.lognormal(np.log(5000), 0.4, M)).astype(np.int64) + 500
    return _Sends(prod=None, seq=j, part=part, send=send, ack=send + latency, txn=txn,
                  aborted=aborted)


def _fault_windows(spec: SyntheticSpec, clock: _Timeline) -> list[tuple[str, int, int, int]]:
    """(fault id, partition, start, end): evenly spaced over the run, one partition each."""
    faults = []
    for k in range(spec.faults):
        start = clock.t0 + int(clock.duration_us * (k + 1) / (spec.faults + 1))
        end = start + int(spec.fault_seconds * 1e6)
        faults.append((f"kill-leader-{k}", int(k % spec.partitions), start, end))
    return faults


def _stall_acks_in_faults(faults, rng, *sends: _Sends) -> None:
    # each fault stalls one partition; its sends are acked only after the heal.
    for _, part, start, end in faults:
        for s in sends:
            hit = (s.part == part) & (s.send >= start) & (s.send < end)
            s.ack[hit] = end + rng.integers(1000, 20000, hit.sum())


def _assign_offsets(plain: _Sends, txn: _Sends, K: int) -> _LogEnds:
    """Set plain.off (-1 when not logged) and txn.off; return each partition's log end."""
    # committed and aborted records share the log, ordered by send time.
    logged = np.flatnonzero(plain.status == ACKED)
    log_is_tx = np.concatenate([np.zeros(len(logged), bool), np.ones(len(txn.seq), bool)])
    log_part = np.concatenate([plain.part[logged], txn.part])
    log_send = np.concatenate([plain.send[logged], txn.send])
    order = np.lexsort((log_send, log_part))
    sorted_part = log_part[order]
    first_of = np.searchsorted(sorted_part, np.arange(K))
    log_off = np.empty(len(order), np.int64)
    log_off[order] = np.arange(len(order)) - first_of[sorted_part]
    plain.off = np.full(len(plain.seq), -1, np.int64)
    plain.off[logged] = log_off[~log_is_tx]
    txn.off = log_off[log_is_tx]
    return _LogEnds(np.bincount(log_part, minlength=K).astype(np.int64))


def _choose_targets(spec: SyntheticSpec, rng, plain: _Sends) -> _Targets:
    """Pick disjoint acked records of p0… for each injection; swap the reordered pairs' offsets."""
    used = np.zeros(len(plain.seq), bool)
    used[plain.status != ACKED] = True
    stride = spec.partitions * spec.producers
    re_a = _reorder_pairs(spec.n("reordered"), stride, used, rng)
    re_b = re_a + stride
    plain.off[re_a], plain.off[re_b] = plain.off[re_b].copy(), plain.off[re_a].copy()

    def pick(count: int) -> np.ndarray:
        if count == 0:
            return np.zeros(0, np.int64)
        cand = np.flatnonzero(~used)
        if len(cand) < count:
            raise ValueError(f"history too small to inject {count} anomalies")
        got = np.sort(rng.choice(cand, count, replace=False))
        used[got] = True
        return got

    return _Targets(lost=pick(spec.n("lost")), overwritten=pick(spec.n("overwritten")),
                    duplicate=pick(spec.n("duplicate")), divergent=pick(spec.n("divergent")),
                    skipped=pick(spec.n("skipped")), redelivered=pick(spec.n("redelivered")))


def _reorder_pairs(count: int, stride: int, used: np.ndarray, rng) -> np.ndarray:
    """First records a of `count` pairs (a, b = a + K*P): consecutive seqs of a producer on
    a partition (K*P records apart). Marks both used."""
    N = len(used)
    pair_ok = np.zeros(N, bool)
    pair_ok[: max(N - stride, 0)] = True
    b_free = np.zeros(N, bool)
    b_free[: max(N - stride, 0)] = ~used[stride:]
    re_a = []
    if count:
        cand = np.flatnonzero(~used & pair_ok & b_free)
        rng.shuffle(cand)
        for a in cand:
            b = a + stride
            if not used[a] and not used[b]:
                used[a] = used[b] = True
                re_a.append(a)
                if len(re_a) == count:
                    break
        if len(re_a) < count:
            raise ValueError("history too small to inject the reorders")
    return np.array(sorted(re_a), np.int64)


def _appended(count: int, K: int, ends: _LogEnds, first_send: int) -> _Appended:
    """`count` records round-robin over the partitions, at their log ends, sent 10 µs apart."""
    part = np.arange(count) % K
    return _Appended(part=part, off=ends.alloc(part), send=first_send + np.arange(count) * 10)


def _produced_rows(ids: dict[str, int], plain: _Sends, txn: _Sends, targets: _Targets,
                   pfail: _Appended, prec: _Appended) -> dict[str, np.ndarray]:
    PR = _Cols(["prod", "seq", "part", "off", "status", "send", "ack", "txn_seq", "txn_out"])
    st = plain.status
    PR.add(prod=plain.prod, seq=plain.seq, part=np.where(st == INDET, -1, plain.part), off=plain.off,
           status=st, send=plain.send,
           ack=np.where(st == INDET, -1, np.where(st == FAILED, plain.send + 5000, plain.ack)))
    # transactional: committed → acked with offset; aborted → failed, no offset.
    M = len(txn.seq)
    PR.add(prod=np.full(M, ids["tx0"]), seq=txn.seq, part=txn.part,
           off=np.where(txn.aborted, -1, txn.off), status=np.where(txn.aborted, FAILED, ACKED),
           send=txn.send, ack=txn.ack, txn_seq=txn.txn, txn_out=np.where(txn.aborted, 1, 0))
    # overwriters pw: acked at the targets' offsets (seq follows offset order per partition).
    over = targets.overwritten
    n_ow = len(over)
    PR.add(prod=np.full(n_ow, ids["pw"]), seq=np.arange(n_ow), part=plain.part[over],
           off=plain.off[over], status=np.full(n_ow, ACKED), send=plain.send[over] + 1,
           ack=plain.ack[over] + 1)
    # pfail: failed outside a transaction, later consumed at end offsets.
    n_pf = len(pfail.part)
    PR.add(prod=np.full(n_pf, ids["pfail"]), seq=np.arange(n_pf), part=pfail.part,
           status=np.full(n_pf, FAILED), send=pfail.send, ack=pfail.send + 4_000)
    # pdiv: indeterminate, seen by c-div at divergent targets' offsets.
    n_dv = len(targets.divergent)
    PR.add(prod=np.full(n_dv, ids["pdiv"]), seq=np.arange(n_dv), status=np.full(n_dv, INDET),
           send=plain.send[targets.divergent] + 2)
    # prec: indeterminate, consumed at end offsets.
    n_rc = len(prec.part)
    PR.add(prod=np.full(n_rc, ids["prec"]), seq=np.arange(n_rc), status=np.full(n_rc, INDET),
           send=prec.send)
    return PR.done()


class _ConsumedRows(_Cols):
    """Consumed rows. Consumer ids: 0..C-1 = c0.., C = drain, C+1 = c-div;
    groups: 0 g0, 1 g-div, -1 none."""

    def __init__(self, C: int, rng, drain_start: int):
        super().__init__(["consumer", "group", "phase", "part", "off", "prod", "seq", "iso", "recv"])
        self.C, self.rng, self.drain_start = C, rng, drain_start

    def run(self, prod, seq, part, off, base_ts) -> None:
        """Received by g0 during the run, an end-to-end latency after base_ts."""
        n = len(part)
        self.add(consumer=part % self.C, group=np.zeros(n), phase=np.full(n, RUN), part=part,
                 off=off, prod=prod, seq=seq, iso=np.ones(n),
                 recv=base_ts + self.rng.integers(500, 8000, n))

    def drain(self, prod, seq, part, off) -> None:
        n = len(part)
        self.add(consumer=np.full(n, self.C), group=np.full(n, -1), phase=np.full(n, DRAIN),
                 part=part, off=off, prod=prod, seq=seq, iso=np.ones(n),
                 recv=self.drain_start + off * 10 + part)


def _consume_committed(rows: _ConsumedRows, ids: dict[str, int], plain: _Sends, txn: _Sends,
                       targets: _Targets) -> None:
    """Every committed record at its offset, but for the lost, overwritten and skipped ones;
    the overwriters in their place."""
    seen_run = plain.status == ACKED
    seen_drain = seen_run.copy()
    for arr in (targets.lost, targets.overwritten):
        seen_run[arr] = seen_drain[arr] = False
    seen_run[targets.skipped] = False
    idx = np.flatnonzero(seen_run)
    rows.run(plain.prod[idx], plain.seq[idx], plain.part[idx], plain.off[idx], plain.ack[idx])
    idx = np.flatnonzero(seen_drain)
    rows.drain(plain.prod[idx], plain.seq[idx], plain.part[idx], plain.off[idx])
    tc = np.flatnonzero(~txn.aborted)
    rows.run(np.full(len(tc), ids["tx0"]), txn.seq[tc], txn.part[tc], txn.off[tc], txn.ack[tc])
    rows.drain(np.full(len(tc), ids["tx0"]), txn.seq[tc], txn.part[tc], txn.off[tc])
    # overwriters at the targets' offsets
    over = targets.overwritten
    n_ow = len(over)
    overwriters = (np.full(n_ow, ids["pw"]), np.arange(n_ow), plain.part[over], plain.off[over])
    rows.run(*overwriters, plain.ack[over] + 1)
    rows.drain(*overwriters)


def _consume_appended(rows: _ConsumedRows, spec: SyntheticSpec, ids: dict[str, int], plain: _Sends,
                      targets: _Targets, ends: _LogEnds, pfail: _Appended, prec: _Appended,
                      clock: _Timeline) -> None:
    """The injected records at the log ends, read by g0 and the drain."""
    # duplicates: the same record again at a fresh offset
    dup = targets.duplicate
    dup_off = ends.alloc(plain.part[dup])
    rows.run(plain.prod[dup], plain.seq[dup], plain.part[dup], dup_off, plain.ack[dup] + 50_000)
    rows.drain(plain.prod[dup], plain.seq[dup], plain.part[dup], dup_off)
    # ghosts never sent
    n_gh = spec.n("unexpected")
    gh_part = np.arange(n_gh) % spec.partitions
    gh_off = ends.alloc(gh_part)
    ghost = np.full(n_gh, ids["ghost"])
    rows.run(ghost, np.arange(n_gh), gh_part, gh_off, np.full(n_gh, clock.t0 + clock.duration_us))
    rows.drain(ghost, np.arange(n_gh), gh_part, gh_off)
    # failed outside a transaction, consumed anyway
    n_pf = len(pfail.part)
    rows.run(np.full(n_pf, ids["pfail"]), np.arange(n_pf), pfail.part, pfail.off, pfail.send + 1000)
    rows.drain(np.full(n_pf, ids["pfail"]), np.arange(n_pf), pfail.part, pfail.off)
    # recovered indeterminate records
    n_rc = len(prec.part)
    rows.run(np.full(n_rc, ids["prec"]), np.arange(n_rc), prec.part, prec.off, prec.send + 1000)
    rows.drain(np.full(n_rc, ids["prec"]), np.arange(n_rc), prec.part, prec.off)


def _consume_misdelivered(rows: _ConsumedRows, spec: SyntheticSpec, rng, ids: dict[str, int],
                          plain: _Sends, txn: _Sends, targets: _Targets) -> int:
    """Deliveries a consumer should not have had: divergent, aborted_read, redelivered.
    Returns how many aborted transactions were read in part (torn_transaction)."""
    # divergent: c-div (group g-div) sees a pdiv record at an acked record's offset
    div = targets.divergent
    n_dv = len(div)
    rows.add(consumer=np.full(n_dv, rows.C + 1), group=np.ones(n_dv), phase=np.full(n_dv, RUN),
             part=plain.part[div], off=plain.off[div], prod=np.full(n_dv, ids["pdiv"]),
             seq=np.arange(n_dv), iso=np.ones(n_dv), recv=plain.ack[div] + 3000)
    # aborted records read by g0 (read_committed)
    ab = np.flatnonzero(txn.aborted)
    n_ar = spec.n("aborted_read")
    if n_ar > len(ab):
        raise ValueError("not enough aborted transactional records to inject aborted_read")
    ab = np.sort(rng.choice(ab, n_ar, replace=False)) if n_ar else ab[:0]
    rows.run(np.full(len(ab), ids["tx0"]), txn.seq[ab], txn.part[ab], txn.off[ab], txn.send[ab] + 9000)
    # redelivered: g0 gets the position once more, later
    redel = targets.redelivered
    rows.run(plain.prod[redel], plain.seq[redel], plain.part[redel], plain.off[redel],
             plain.ack[redel] + 2_000_000)
    sizes = np.bincount(txn.txn)
    read = np.bincount(txn.txn[ab], minlength=len(sizes))
    return int(((read > 0) & (read < sizes)).sum())


def _commit_rows(K: int, ends: _LogEnds, clock: _Timeline) -> dict[str, np.ndarray]:
    # g0 commits every 1000 offsets per partition, and the log end at the end.
    cm_part, cm_off, cm_ts = [], [], []
    for p in range(K):
        end = ends.next_free[p]
        marks = np.arange(1000, int(end), 1000, dtype=np.int64)
        cm_part.append(np.full(len(marks) + 1, p))
        cm_off.append(np.append(marks, end))
        cm_ts.append(np.append(clock.t0 + (marks * K * clock.interval).astype(np.int64),
                               clock.drain_start - 1_000_000))
    return {"part": np.concatenate(cm_part), "off": np.concatenate(cm_off),
            "ts": np.concatenate(cm_ts)}


def _counts(produced: dict[str, np.ndarray], consumed: dict[str, np.ndarray]) -> dict[str, int]:
    return {"sent": len(produced["seq"]),
            "acked": int((produced["status"] == ACKED).sum()),
            "failed": int((produced["status"] == FAILED).sum()),
            "indeterminate": int((produced["status"] == INDET).sum()),
            "consumed": len(consumed["seq"])}


# ------------------------------------------------------------------ writing

def _nullable(a: np.ndarray, typ) -> pa.Array:
    return pa.array(a, type=typ, mask=(a < 0))


def _write(run_dir: Path, spec: SyntheticSpec, names: list[str], produced, consumed, commits,
           faults, clock: _Timeline, C: int) -> None:
    hist = run_dir / "history"
    for t in ("produced", "consumed", "commits", "events"):
        (hist / t).mkdir(parents=True, exist_ok=True)
    _write_produced(hist / "produced", spec, names, produced)
    _write_consumed(hist / "consumed", spec, names, consumed, C)
    _write_commits(hist / "commits", spec, commits, C)
    _write_events(hist / "events", spec, faults, clock)
    if spec.write_scenario:
        _write_scenario(run_dir, spec, clock)


def _record_ids(names: list[str], prod: np.ndarray, seq: np.ndarray) -> pa.Array:
    """"<producer>-<seq>" per row."""
    return pc.binary_join_element_wise(pc.take(pa.array(names), pa.array(prod)),
                                       pc.cast(pa.array(seq), pa.string()), "-")


def _chunks(n: int, chunk: int):
    """(part file number, row slice) per `chunk` rows; one (empty) part when n is 0."""
    for part_no, lo in enumerate(range(0, max(n, 1), chunk)):
        yield part_no, slice(lo, min(lo + chunk, n))


def _write_produced(out: Path, spec: SyntheticSpec, names: list[str], produced) -> None:
    err_names = pa.array([None, "MSG_TIMED_OUT", "_TIMED_OUT"])
    for part_no, s in _chunks(len(produced["seq"]), spec.chunk_rows):
        prod, seq = produced["prod"][s], produced["seq"][s]
        st = produced["status"][s]
        is_tx = prod == names.index("tx0")
        txn_out = produced["txn_out"][s]
        cols = {
            "run_id": pa.array(np.full(len(seq), spec.run_id, dtype=object), pa.string()),
            "producer": pc.take(pa.array(names), pa.array(prod)),
            "seq": pa.array(seq, pa.int64()),
            "record_id": _record_ids(names, prod, seq),
            "key": pa.nulls(len(seq), pa.string()),
            "topic": pa.array(np.full(len(seq), spec.topic, dtype=object), pa.string()),
            "partition": _nullable(produced["part"][s], pa.int32()),
            "offset": _nullable(produced["off"][s], pa.int64()),
            "status": pc.take(pa.array(list(STATUS)), pa.array(st)),
            "error": pc.take(err_names, pa.array(st)),
            "send_ts_us": pa.array(produced["send"][s], pa.int64()),
            "ack_ts_us": _nullable(produced["ack"][s], pa.int64()),
            "txn_id": pa.array(np.where(is_tx, "tx0", None), pa.string()),
            "txn_seq": _nullable(produced["txn_seq"][s], pa.int64()),
            "txn_outcome": pc.take(pa.array([None, "committed", "aborted"]),
                                   pa.array(np.where(is_tx, txn_out + 1, 0))),
            # not told: who acknowledged is checked on the casebook
            "acked_by": pa.nulls(len(seq), pa.int32()),
            # no compacted topic here
            "version": pa.nulls(len(seq), pa.int64()),
            "tombstone": pa.nulls(len(seq), pa.bool_()),
        }
        pq.write_table(pa.table(cols, schema=SCHEMAS["produced"]),
                       out / f"synthetic-{part_no:06d}.parquet")


def _write_consumed(out: Path, spec: SyntheticSpec, names: list[str], consumed, C: int) -> None:
    consumers = pa.array([f"c{i}" for i in range(C)] + ["drain", "c-div"])
    groups = pa.array([None, "g0", "g-div"])
    for part_no, s in _chunks(len(consumed["seq"]), spec.chunk_rows):
        seq = consumed["seq"][s]
        cols = {
            "run_id": pa.array(np.full(len(seq), spec.run_id, dtype=object), pa.string()),
            "consumer": pc.take(consumers, pa.array(consumed["consumer"][s])),
            "group_id": pc.take(groups, pa.array(consumed["group"][s] + 1)),
            "phase": pc.take(pa.array(["run", "drain"]), pa.array(consumed["phase"][s])),
            "topic": pa.array(np.full(len(seq), spec.topic, dtype=object), pa.string()),
            "partition": pa.array(consumed["part"][s], pa.int32()),
            "offset": pa.array(consumed["off"][s], pa.int64()),
            "key": pa.nulls(len(seq), pa.string()),
            "record_id": _record_ids(names, consumed["prod"][s], seq),
            "isolation": pc.take(pa.array(["read_uncommitted", "read_committed"]),
                                 pa.array(consumed["iso"][s])),
            "recv_ts_us": pa.array(consumed["recv"][s], pa.int64()),
            # not told: the poll kinds are checked on the casebook
            # (tests/unit/spark/test_reconcile_cases.py), not here
            "poll_seq": pa.nulls(len(seq), pa.int64()),
            "leader_epoch": pa.nulls(len(seq), pa.int32()),
            "assignment": pa.nulls(len(seq), pa.int32()),
            "source_record_id": pa.nulls(len(seq), pa.string()),      # no pipeline here
            "key_count": pa.nulls(len(seq), pa.int64()),
            "pipeline_instance": pa.nulls(len(seq), pa.string()),
            "pipeline_txn": pa.nulls(len(seq), pa.int64()),
            "cluster": pa.nulls(len(seq), pa.string()),               # no mirror here
        }
        pq.write_table(pa.table(cols, schema=SCHEMAS["consumed"]),
                       out / f"synthetic-{part_no:06d}.parquet")


def _write_commits(out: Path, spec: SyntheticSpec, commits, C: int) -> None:
    k = len(commits["part"])
    pq.write_table(pa.table({
        "run_id": [spec.run_id] * k,
        "consumer": [f"c{p % C}" for p in commits["part"]],
        "group_id": ["g0"] * k, "topic": [spec.topic] * k,
        "partition": pa.array(commits["part"], pa.int32()),
        "offset": pa.array(commits["off"], pa.int64()),
        "ok": [True] * k, "error": pa.nulls(k, pa.string()),
        "ts_us": pa.array(commits["ts"], pa.int64()),
        "cluster": pa.nulls(k, pa.string())}, schema=SCHEMAS["commits"]),      # no mirror here
        out / "synthetic-000000.parquet")


def _write_events(out: Path, spec: SyntheticSpec, faults, clock: _Timeline) -> None:
    """Phases, leaders and ISRs, and each fault's kill and heal (leaders on brokers 1-3)."""
    topic = spec.topic
    ev = []

    def e(ts, kind, name, target=None, **detail):
        ev.append({"run_id": spec.run_id, "ts_us": int(ts), "kind": kind, "name": name,
                   "target": target, "detail": json.dumps(detail, sort_keys=True)})

    e(clock.t0 - 1_000_000, "phase", "load-start")
    for p in range(spec.partitions):
        e(clock.t0 - 900_000, "observe", "leader", None, topic=topic, partition=p, leader=p % 3 + 1,
          isr=[1, 2, 3])
    for name, part, start, end in faults:
        leader = part % 3 + 1
        target = f"kafka-{leader}"
        e(start, "fault", "kill-leader", target, fault_id=name, signal="SIGKILL")
        e(start + 200_000, "observe", "isr", None, topic=topic, partition=part, leader=-1,
          isr=[b for b in (1, 2, 3) if b != leader])
        e(end - 10_000, "observe", "leader", None, topic=topic, partition=part,
          leader=leader % 3 + 1, isr=[b for b in (1, 2, 3) if b != leader])
        e(end, "heal", "kill-leader", target, fault_id=name)
        e(end + 2_000_000, "observe", "isr", None, topic=topic, partition=part,
          leader=leader % 3 + 1, isr=[1, 2, 3])
    e(clock.t0 + clock.duration_us, "phase", "load-end")
    e(clock.drain_start - 1, "phase", "drain-start")
    e(clock.drain_start + 5_000_000, "phase", "drain-end")
    pq.write_table(pa.Table.from_pylist(ev, schema=SCHEMAS["events"]),
                   out / "synthetic-000000.parquet")


def _write_scenario(run_dir: Path, spec: SyntheticSpec, clock: _Timeline) -> None:
    # a scenario of the project's model (harness/scenario/) the verifier takes
    # its facts from: idempotent, acks=all, min ISR 2, commits after processing
    topic = spec.topic
    (run_dir / "scenario.yaml").write_text(yaml.safe_dump({
        "name": "synthetic",
        "description": f"benchmarks/synthetic.py: {spec.records} records, "
                       f"injected {dict(spec.inject)}, seed {spec.seed}",
        "seed": spec.seed,
        "cluster": {"mode": "kraft-combined", "version": "3.9", "brokers": 3},
        "topics": [{"name": topic, "partitions": spec.partitions, "replication_factor": 3,
                    "configs": {"min.insync.replicas": 2}}],
        "workload": {"duration_s": max(0.001, clock.duration_us / 1e6),
                     # p0… share rate_per_s (their plans: load_shortfall is judged)
                     "producers": [{"name": f"p{i}", "topic": topic,
                                    "rate": spec.rate_per_s / spec.producers}
                                   for i in range(spec.producers)],
                     "consumers": [{"group_id": "g0", "topics": [topic],
                                    "isolation": "read_committed"}]},
    }, sort_keys=False))
    (run_dir / "manifest.json").write_text(json.dumps({
        "run_id": spec.run_id, "generator": "benchmarks/synthetic.py",
        "seed": spec.seed}, indent=2))


def main(argv: list[str] | None = None) -> int:
    import argparse
    ap = argparse.ArgumentParser(description="write a synthetic run history")
    ap.add_argument("run_dir")
    ap.add_argument("--records", type=int, default=10_000)
    ap.add_argument("--each", type=int, default=3, help="inject this many of every kind")
    ap.add_argument("--seed", type=int, default=7)
    a = ap.parse_args(argv)
    out = generate(a.run_dir, SyntheticSpec(records=a.records, seed=a.seed,
                                            inject={k: a.each for k in INJECTABLE}))
    print(json.dumps(out, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
