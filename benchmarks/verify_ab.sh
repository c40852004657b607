#!/usr/bin/env bash
# Time `harness verify` of one run directory with two checkouts, alternating, in one go
# (this machine's noise moves single runs by ±20 %: only rounds interleaved in the same
# minutes compare two versions of the checker fairly).
#
#   benchmarks/verify_ab.sh A_CHECKOUT B_CHECKOUT RUN_DIR [ROUNDS]
#   VENV=/path/to/.venv benchmarks/verify_ab.sh /tmp/base . runs/20261126-… 5
#
# Each round verifies a fresh copy of RUN_DIR (its report/ left out, so nothing
# accumulates and neither side finds the other's output) once with A and once with B:
# `PYTHONPATH=<checkout> $VENV/bin/python -m harness.cli verify <copy>`. Odd rounds run
# A first, even rounds B first. Times are the whole process's wall time (Python, the
# Spark driver JVM, its start and stop). Prints each time and exit code, each round's
# B/A ratio, then the medians. ROUNDS defaults to 3; VENV to this checkout's .venv.
set -euo pipefail

usage() { echo "usage: $0 A_CHECKOUT B_CHECKOUT RUN_DIR [ROUNDS]" >&2; exit 2; }
[ $# -ge 3 ] && [ $# -le 4 ] || usage
a_dir=$(cd "$1" && pwd) || usage
b_dir=$(cd "$2" && pwd) || usage
run_dir=$(cd "$3" && pwd) || usage
rounds=${4:-3}
here=$(cd "$(dirname "$0")/.." && pwd)
venv=${VENV:-$here/.venv}
py=$venv/bin/python

for d in "$a_dir" "$b_dir"; do
  [ -f "$d/harness/cli.py" ] || { echo "$d: not a checkout (no harness/cli.py)" >&2; exit 2; }
done
[ -d "$run_dir/history" ] || { echo "$run_dir: not a run directory (no history/)" >&2; exit 2; }
[ -x "$py" ] || { echo "$py: no Python there; set VENV to the virtualenv" >&2; exit 2; }
[[ "$rounds" =~ ^[1-9][0-9]*$ ]] || { echo "ROUNDS: a positive whole number, not '$rounds'" >&2; exit 2; }

scratch=$(mktemp -d "${TMPDIR:-/tmp}/verify-ab.XXXXXX")
trap 'rm -rf "$scratch"' EXIT

# one_verify CHECKOUT: the seconds it took, then its exit code, on stdout
one_verify() {
  local copy=$scratch/$(basename "$run_dir") start end code=0
  rm -rf "$copy"
  cp -r "$run_dir" "$copy"
  rm -rf "$copy/report"
  start=$(date +%s.%N)
  PYTHONPATH="$1" "$py" -m harness.cli verify "$copy" > "$scratch/out.log" 2>&1 || code=$?
  end=$(date +%s.%N)
  rm -rf "$copy"
  awk -v s="$start" -v e="$end" -v c="$code" 'BEGIN { printf "%.2f %d\n", e - s, c }'
}

median() { sort -g | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }

echo "A: $a_dir"
echo "B: $b_dir"
echo "run: $run_dir ($rounds rounds, $py)"
: > "$scratch/a"; : > "$scratch/b"; : > "$scratch/ratio"
for ((i = 1; i <= rounds; i++)); do
  if ((i % 2)); then order="a b"; else order="b a"; fi
  for side in $order; do
    if [ "$side" = a ]; then dir=$a_dir; else dir=$b_dir; fi
    read -r secs code < <(one_verify "$dir")
    echo "$secs" >> "$scratch/$side"
    eval "${side}_secs=$secs ${side}_code=$code"
  done
  ratio=$(awk -v a="$a_secs" -v b="$b_secs" 'BEGIN { printf "%.3f", b / a }')
  echo "$ratio" >> "$scratch/ratio"
  echo "round $i: A ${a_secs} s (exit $a_code)  B ${b_secs} s (exit $b_code)  B/A $ratio"
  [ "$a_code" = "$b_code" ] || echo "  note: A and B exited differently ($a_code, $b_code)"
done
med_a=$(median < "$scratch/a")
med_b=$(median < "$scratch/b")
ratio_of_medians=$(awk -v a="$med_a" -v b="$med_b" 'BEGIN { printf "%.3f", b / a }')
echo "median: A $med_a s  B $med_b s  B/A of the medians $ratio_of_medians" \
     "(median of the rounds' B/A $(median < "$scratch/ratio"))"
