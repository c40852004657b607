#!/bin/bash
# The share-group evidence matrix (issue 35): client x version x fault x seed, one run
# per cell, each holding the machine's cluster lock; one line per run appended to
# $OUT (default benchmarks/share_matrix/results.tsv), read by summarize.py; a cell
# already in $OUT is skipped (resume after an interruption).
#   bash benchmarks/share_matrix/run.sh "1 2 3" "4.3 4.2 4.1" "librdkafka java"
# librdkafka is skipped on 4.1 (its member ids break 4.1.2's ShareFetch: docs/scenarios.md).
set -u
cd "$(dirname "$0")/../.."
SEEDS=${1:-1}; VERSIONS=${2:-"4.3 4.2 4.1"}; CLIENTS=${3:-"librdkafka java"}
OUT=${OUT:-benchmarks/share_matrix/results.tsv}
HARNESS=${HARNESS:-.venv/bin/harness}
for seed in $SEEDS; do for v in $VERSIONS; do for c in $CLIENTS; do
  [ "$c" = librdkafka ] && [ "$v" = 4.1 ] && continue
  for f in benchmarks/share_matrix/*.yaml; do
    cell="$c $v $(basename "$f" .yaml) seed=$seed"
    # a cell already recorded is not run again: the matrix can be resumed
    grep -q "^$cell"$'\t' "$OUT" 2>/dev/null && continue
    log=$(mktemp)
    flock /tmp/harness-cluster.lock timeout 900 "$HARNESS" run "$f" --plain \
      --set cluster.version="$v" --set workload.share_groups.0.client="$c" --set seed="$seed" >"$log" 2>&1
    rc=$?
    dir=$(grep -o 'run dir: [^ ]*' "$log" | tail -1 | cut -d' ' -f3)
    printf '%s\t%s\t%s\t%s\n' "$cell" "$rc" "$dir" "$(date -u +%H:%M:%S)" >>"$OUT"
    rm -f "$log"
  done
done; done; done
