#!/bin/bash
# ab-forward.sh M DIR_A DIR_B [MODEL_DIR]: time forwards of M tokens with two builds, in pairs.
#
# DIR_A and DIR_B each hold a specd-model-bench and the plugins/ folder it loads (copies of
# build/bin from two commits). Each of RUNS pairs (default 6) runs `specd-model-bench
# MODEL_DIR/target.gguf --threads 2 --repeats 3 --only-m M` once with each build, alternating
# which goes first, and prints both times and their ratio B/A; the last line is the median
# ratio. Pairs see the same state of a shared machine, whose speed drifts by tens of percent
# over minutes, so the median ratio is steadier than either build's times. MODEL_DIR defaults
# to /tmp/qint-m (`specd bench --construct --out /tmp/qint-m --size 95m --type q4_K_M`).
set -euo pipefail
if [ $# -lt 3 ]; then
  sed -n '2,10p' "$0" >&2
  exit 2
fi
m=$1 a=$2 b=$3 model=${4:-/tmp/qint-m}
runs=${RUNS:-6}
time_of() {
  "$1/specd-model-bench" "$model/target.gguf" --threads 2 --repeats 3 --only-m "$m" |
    awk '/^forward/ {print $2}'
}
ratios=()
for i in $(seq "$runs"); do
  if ((i % 2)); then
    ta=$(time_of "$a")
    tb=$(time_of "$b")
  else
    tb=$(time_of "$b")
    ta=$(time_of "$a")
  fi
  r=$(awk -v a="$ta" -v b="$tb" 'BEGIN {printf "%.3f", b / a}')
  ratios+=("$r")
  echo "m=$m A $ta ms B $tb ms B/A $r"
done
printf '%s\n' "${ratios[@]}" | sort -n |
  awk '{v[NR] = $1} END {printf "median B/A %.3f\n", NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2}'
