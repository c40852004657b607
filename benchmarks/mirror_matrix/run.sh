#!/bin/bash
# The MirrorMaker 2 evidence matrix (issue 38): fault x versions x exactly-once x seed, one
# `harness run` per cell, each holding the machine's cluster lock; one line per run
# appended to $OUT (default benchmarks/mirror_matrix/results.tsv), read by summarize.py; a
# cell already in $OUT is skipped (resume after an interruption); no run starts after
# STOP_AT (UTC, HHMM). One base scenario per fault (this directory: 3-broker source, 1-broker
# target, 20 s at 200 records/s, g0 failing over at the drain; link-partition-target: MM2
# cut off from the target, link-partition from the source, link-partition-long from the
# source for 40 s: past the clients' 30 s request timeout, 60 s of load); the versions and MM2's mode
# are chosen with --set:
#   versions  4.3     source and target 4.3 (MM2 4.3)
#             3.9-4.3 source 3.9, target (and MM2, which runs beside the target) 4.3
#   eos       off     MM2 at least once;  on: exactly.once.source.support (KIP-618)
#   bash benchmarks/mirror_matrix/run.sh "1 2 3" "4.3 3.9-4.3" "off on"
#   FAULTS="mm2-kill link-partition" STOP_AT=1620 bash ... run.sh 1 4.3 off
# LAG=1: first (once per seed), lag-default-rate.yaml: no fault, the default scenario's
# rate (2 000 records/s for 60 s): MM2's replication lag.
set -u
cd "$(dirname "$0")/../.."
SEEDS=${1:-1}; VERSIONS=${2:-"4.3 3.9-4.3"}; EOS=${3:-"off on"}
FAULTS=${FAULTS:-"mm2-kill link-partition link-latency source-leader-kill target-pause mm2-pause link-partition-target link-partition-long"}
OUT=${OUT:-benchmarks/mirror_matrix/results.tsv}
HARNESS=${HARNESS:-.venv/bin/harness}
RUNS_DIR=${RUNS_DIR:-runs}
M=benchmarks/mirror_matrix
version_args() {   # 4.3 | 3.9-4.3 -> --set arguments
  case $1 in
    *-*) echo --set cluster.version="${1%-*}" --set workload.mirror.target.version="${1#*-}" ;;
    *) echo --set cluster.version="$1" ;;
  esac
}
. benchmarks/matrix_cell.sh     # run_cell (the cd above: at the repository root)
for seed in $SEEDS; do
  [ -n "${LAG:-}" ] && run_cell "lag-default-rate 3.9 eos=off seed=$seed" $M/lag-default-rate.yaml \
    --set seed="$seed"
  for v in $VERSIONS; do for e in $EOS; do for f in $FAULTS; do
  eos=false; [ "$e" = on ] && eos=true
  # shellcheck disable=SC2046  # version_args: --set pairs without spaces inside
  run_cell "$f $v eos=$e seed=$seed" $M/$f.yaml --set seed="$seed" $(version_args "$v") \
    --set workload.mirror.exactly_once=$eos
done; done; done; done
