#!/bin/bash
# Runs scenario.yaml once per seed and version, each run holding the cluster lock; one
# line per run appended to runs.tsv (cell, exit code, run dir, end time) and the
# deposed leader's answers (deposed.py) to deposed.txt.
#   bash benchmarks/evidence/share-deposed-leader/run.sh "1 2 3" "4.1 4.3" [extra --set ...]
set -u
cd "$(dirname "$0")/../../.."
HERE=benchmarks/evidence/share-deposed-leader
SEEDS=${1:-1}; VERSIONS=${2:-4.1}; shift 2 || true
HARNESS=${HARNESS:-.venv/bin/harness}; PY=${PY:-.venv/bin/python}
RUNS=${RUNS:-runs}; TAG=${TAG:-deposed}
for v in $VERSIONS; do for seed in $SEEDS; do
  log=$(mktemp)
  flock /tmp/harness-cluster.lock timeout 900 "$HARNESS" run "$HERE/scenario.yaml" --plain \
    --runs-dir "$RUNS" --set cluster.version="$v" --set seed="$seed" "$@" >"$log" 2>&1
  rc=$?
  dir=$(grep -o 'run dir: [^ ]*' "$log" | tail -1 | cut -d' ' -f3)
  printf '%s\t%s\t%s\t%s\n' "$TAG java $v seed=$seed" "$rc" "$dir" "$(date -u +%H:%M:%S)" >>"$HERE/runs.tsv"
  [ -n "$dir" ] && PYTHONPATH=$PWD "$PY" benchmarks/share_matrix/deposed.py "$dir" >>"$HERE/deposed.txt"
  cp "$log" "/tmp/share35-$TAG-$v-$seed.log"; rm -f "$log"
done; done
