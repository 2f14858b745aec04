#!/bin/bash
# Full model pipeline: data -> target -> {draft (KD), Medusa, EAGLE, MTP in parallel} ->
# draft-gt (same number of steps as the KD draft) -> cards -> reload checks.
# Usage: train/pipeline.sh OUT_DIR WORK_DIR [smoke]
#   OUT_DIR   where the GGUFs and cards go (models/ for the real run)
#   WORK_DIR  intermediate files (train/work for the real run)
#   smoke     tiny data slice and a few steps per stage (for `make models-smoke`)
# Env: SPECD_TRAIN_THREADS (threads for the target stage, default 2; the parallel stages use 1
# each), SPECD_SKIP_DONE=1 (skip stages whose metrics file already exists, to resume).
# Each stage's log is WORK_DIR/logs/<stage>.log. The exit status is non-zero if any stage failed.
set -u
OUT=${1:-models}
WORK=${2:-train/work}
MODE=${3:-full}
PY=/usr/bin/python3
CFG=train/configs
mkdir -p "$OUT" "$WORK/logs" "$WORK/metrics"
EXTRA=()
PREP=()
if [ "$MODE" = smoke ]; then
  EXTRA=(--minutes 0.2 --max-steps 2 --eval-windows 2 --batch-size 2 --seq-len 64)
  PREP=(--max-files 3 --vocab-size 400)
fi
THREADS=${SPECD_TRAIN_THREADS:-2}
FAILED=0
stage() {  # stage NAME cmd...
  local name=$1; shift
  if [ "${SPECD_SKIP_DONE:-0}" = 1 ] && [ -f "$WORK/metrics/$name.json" ] && [ -f "$OUT/$name.gguf" ]; then
    echo "[$(date -u +%H:%M:%S)] skip  $name (already done)"; return 0
  fi
  echo "[$(date -u +%H:%M:%S)] start $name: $*"
  if "$@" > "$WORK/logs/$name.log" 2>&1; then
    echo "[$(date -u +%H:%M:%S)] done  $name"
  else
    echo "[$(date -u +%H:%M:%S)] FAIL  $name (see $WORK/logs/$name.log)"
    tail -5 "$WORK/logs/$name.log"
    return 1
  fi
}
T0=$(date +%s)
if [ ! -f "$WORK/data/tokenizer.json" ] || [ ! -f "$WORK/data/heldout_prose.npy" ]; then
  stage data $PY train/prepare_data.py --out "$WORK/data" "${PREP[@]}" || exit 1
fi
SPECD_TRAIN_THREADS=$THREADS stage target $PY train/train_lm.py --config $CFG/target.toml --data "$WORK/data" \
  --out "$OUT/target.gguf" --metrics "$WORK/metrics/target.json" "${EXTRA[@]}" || exit 1
# Stages that only need the frozen target run in parallel, one thread each.
export SPECD_TRAIN_THREADS=1
pids=()
stage draft $PY train/train_lm.py --config $CFG/draft.toml --data "$WORK/data" \
  --teacher "$OUT/target.gguf" --out "$OUT/draft.gguf" --metrics "$WORK/metrics/draft.json" "${EXTRA[@]}" &
pids+=($!)
for h in medusa eagle mtp; do
  stage $h $PY train/train_heads.py --kind $h --config $CFG/$h.toml --data "$WORK/data" \
    --target "$OUT/target.gguf" --out "$OUT/$h.gguf" --metrics "$WORK/metrics/$h.json" "${EXTRA[@]}" &
  pids+=($!)
done
wait "${pids[0]}" || FAILED=1
# draft-gt matches the KD draft's step count (read from its metrics), so it runs after it.
SPECD_TRAIN_THREADS=$THREADS stage draft-gt $PY train/train_lm.py --config $CFG/draft-gt.toml --data "$WORK/data" \
  --teacher "$OUT/target.gguf" --out "$OUT/draft-gt.gguf" --metrics "$WORK/metrics/draft-gt.json" "${EXTRA[@]}" || FAILED=1
for p in "${pids[@]:1}"; do wait "$p" || FAILED=1; done
stage cards $PY train/cards.py --metrics "$WORK/metrics" --out "$OUT" --total-seconds $(( $(date +%s) - T0 )) || FAILED=1
for f in "$OUT"/*.gguf; do
  SPECD_SKIP_DONE=0 stage "check-$(basename "$f" .gguf)" $PY train/reference_forward.py "$f" --tokens 0,100,200,300 --check || FAILED=1
done
echo "[$(date -u +%H:%M:%S)] pipeline finished, failed=$FAILED, $(( $(date +%s) - T0 ))s"
exit $FAILED
