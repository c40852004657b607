#!/bin/bash
# The exactly-once pipeline evidence matrix (issue 36): fault x processor x version x seed,
# one `harness run` per cell, each holding the machine's cluster lock; one line per run
# appended to $OUT (default benchmarks/pipeline_matrix/results.tsv), read by summarize.py;
# a cell already in $OUT is skipped (resume after an interruption). Seeds outermost: an
# interrupted matrix still has whole seeds. One base scenario per fault (this directory);
# the processor is chosen with --set:
#   librdkafka    send_offsets_to_transaction (transactions v1: librdkafka speaks no v2)
#   java-v1       Kafka's Java clients, cluster.transaction_version 1 (on 3.9 the only one)
#   java-v2       Kafka's Java clients on 4.x brokers (transaction.version 2)
#   streams-eos   Kafka Streams, processing.guarantee exactly_once_v2
#   streams-alo   Kafka Streams, at_least_once: the control (may duplicate, must not lose)
#   bash benchmarks/pipeline_matrix/run.sh "1 2 3" "4.3 3.9"
#   FAULTS="leader-kill processor-kill" PROCESSORS="librdkafka java-v2" bash ... run.sh 1 4.3
set -u
cd "$(dirname "$0")/../.."
SEEDS=${1:-1}; VERSIONS=${2:-"4.3 3.9"}
FAULTS=${FAULTS:-"leader-kill coordinator-kill coordinator-pause processor-kill delayed-produce"}
PROCESSORS=${PROCESSORS:-"librdkafka java-v1 java-v2 streams-eos streams-alo"}
OUT=${OUT:-benchmarks/pipeline_matrix/results.tsv}
HARNESS=${HARNESS:-.venv/bin/harness}
RUNS_DIR=${RUNS_DIR:-runs}
M=benchmarks/pipeline_matrix
processor_args() {  # processor, version -> its --set arguments; none (return 1) where it does not apply
  local p=$1 v=$2
  case $p in
    librdkafka) ;;
    java-v1) echo --set workload.pipelines.0.client=java
             [ "${v%%.*}" -ge 4 ] && echo --set cluster.transaction_version=1 ;;
    java-v2) [ "${v%%.*}" -ge 4 ] || return 1
             echo --set workload.pipelines.0.client=java ;;
    streams-eos) echo --set workload.pipelines.0.client=streams ;;
    streams-alo) echo --set workload.pipelines.0.client=streams \
                      --set workload.pipelines.0.processing=at_least_once ;;
  esac
  return 0
}
. benchmarks/matrix_cell.sh     # run_cell (the cd above: at the repository root)
for seed in $SEEDS; do for v in $VERSIONS; do for f in $FAULTS; do for p in $PROCESSORS; do
  args=$(processor_args "$p" "$v") || continue
  # at_least_once has no transactions: no transaction coordinator to kill or pause
  [ "$p" = streams-alo ] && [ "${f#coordinator-}" != "$f" ] && continue
  # shellcheck disable=SC2086  # args: --set pairs without spaces inside
  run_cell "$f $p $v seed=$seed" $M/$f.yaml --set cluster.version="$v" --set seed="$seed" $args
done; done; done; done
