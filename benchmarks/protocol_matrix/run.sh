#!/bin/bash
# The protocol-fault evidence matrix (issue 39): scenario x client x version x seed, one run
# per cell, each holding the machine's cluster lock; one line per run appended to $OUT
# (default benchmarks/protocol_matrix/results.tsv), read by summarize.py; a cell already in
# $OUT is skipped (resume after an interruption). Seeds outermost: an interrupted matrix
# still has whole seeds.
#   bash benchmarks/protocol_matrix/run.sh "1 2 3" "3.9 4.3"
set -u
cd "$(dirname "$0")/../.."
SEEDS=${1:-1}; VERSIONS=${2:-"3.9 4.3"}
OUT=${OUT:-benchmarks/protocol_matrix/results.tsv}
HARNESS=${HARNESS:-.venv/bin/harness}
M=benchmarks/protocol_matrix
run_cell() {       # cell name, then the harness run arguments
  local cell=$1; shift
  grep -q "^$cell"$'\t' "$OUT" 2>/dev/null && return
  local log; log=$(mktemp)
  flock /tmp/harness-cluster.lock timeout 900 $HARNESS run "$@" --plain >"$log" 2>&1
  local rc=$?
  local dir; dir=$(grep -o 'run dir: [^ ]*' "$log" | tail -1 | cut -d' ' -f3)
  printf '%s\t%s\t%s\t%s\n' "$cell" "$rc" "$dir" "$(date -u +%H:%M:%S)" >>"$OUT"
  rm -f "$log"
}
for seed in $SEEDS; do for v in $VERSIONS; do
  common=(--set cluster.version="$v" --set seed="$seed")
  run_cell "indeterminate-produce librdkafka $v seed=$seed" indeterminate-produce "${common[@]}"
  run_cell "indeterminate-produce java $v seed=$seed" $M/indeterminate-produce-java.yaml "${common[@]}"
  run_cell "not-leader-storm both $v seed=$seed" not-leader-storm "${common[@]}"
  run_cell "txn-delayed-produce-exact librdkafka $v seed=$seed" txn-delayed-produce-exact "${common[@]}"
  if [ "$v" = 3.9 ]; then
    run_cell "txn-delayed-produce-exact java-v1 $v seed=$seed" txn-delayed-produce-exact "${common[@]}" \
      --set workload.producers.0.client=java
  else
    run_cell "txn-delayed-produce-exact java-v2 $v seed=$seed" txn-delayed-produce-exact "${common[@]}" \
      --set workload.producers.0.client=java
    run_cell "txn-delayed-produce-exact java-v1 $v seed=$seed" txn-delayed-produce-exact "${common[@]}" \
      --set workload.producers.0.client=java --set cluster.transaction_version=1
  fi
done; done
