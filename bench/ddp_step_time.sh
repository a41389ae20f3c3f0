#!/usr/bin/env bash
# Step time of libdsrt's stage 0 (examples/train_mlp) against PyTorch's Python DDP with Gloo
# (bench/ddp_peer.py on /usr/bin/python3), same MLP, same per-rank batch, 2 ranks, Adam, OMP_NUM_THREADS
# fixed for both. Runs alternate (dsrt, torch, dsrt, torch, ...) so both see the same machine load;
# prints every run and the medians, then the ratio dsrt / torch (target: <= 0.8).
# Usage: bench/ddp_step_time.sh [rounds=5] [steps=40]   (env: BUILD_DIR=build, HIDDEN=1024, LAYERS=4, THREADS=1)
set -euo pipefail
cd "$(dirname "$0")/.."
ROUNDS=${1:-5}
STEPS=${2:-40}
BUILD_DIR=${BUILD_DIR:-build}
HIDDEN=${HIDDEN:-1024}
LAYERS=${LAYERS:-4}
export OMP_NUM_THREADS=${THREADS:-1}
TRAIN=$BUILD_DIR/examples/train_mlp
[ -x "$TRAIN" ] || { echo "ddp_step_time.sh: $TRAIN not built (run scripts/build.sh)" >&2; exit 1; }
/usr/bin/python3 -c 'import torch.distributed' 2>/dev/null ||
  { echo "ddp_step_time.sh: /usr/bin/python3 has no torch (apt-get install python3-torch)" >&2; exit 1; }

# Starts 2 ranks of "$@" with the launcher variables set; prints rank 0's median_step_ms value.
two_ranks() {
  local port=$((20000 + RANDOM % 20000)) out rc=0 pids=()
  out=$(mktemp)
  for r in 0 1; do
    RANK=$r LOCAL_RANK=$r WORLD_SIZE=2 MASTER_ADDR=127.0.0.1 MASTER_PORT=$port "$@" > "$out.$r" 2>&1 &
    pids+=($!)
  done
  for p in "${pids[@]}"; do wait "$p" || rc=1; done
  if [ $rc -ne 0 ] || ! grep -q median_step_ms "$out.0"; then
    echo "ddp_step_time.sh: run failed: $*" >&2; cat "$out.0" "$out.1" >&2; rm -f "$out"*; exit 1
  fi
  awk '/median_step_ms/ {print $2}' "$out.0"
  rm -f "$out"*
}

median() { sort -g | awk '{a[NR]=$1} END {print (NR % 2) ? a[(NR+1)/2] : (a[NR/2] + a[NR/2+1]) / 2}'; }

dsrt=() torch=()
for ((i = 1; i <= ROUNDS; i++)); do
  d=$(two_ranks "$TRAIN" --deepspeed_config bench/ds_config_bench_zero0.json --hidden "$HIDDEN" --layers "$LAYERS" \
        --steps "$STEPS" --seed 42)
  t=$(two_ranks /usr/bin/python3 bench/ddp_peer.py --hidden "$HIDDEN" --layers "$LAYERS" --micro_batch 32 \
        --steps "$STEPS" --seed 42)
  echo "round $i: libdsrt stage 0 ${d} ms/step, PyTorch DDP ${t} ms/step"
  dsrt+=("$d") torch+=("$t")
done
md=$(printf '%s\n' "${dsrt[@]}" | median)
mt=$(printf '%s\n' "${torch[@]}" | median)
echo "model: $LAYERS x Linear($HIDDEN,$HIDDEN), batch 32 per rank, 2 ranks, Adam, OMP_NUM_THREADS=$OMP_NUM_THREADS, load $(cut -d' ' -f1-3 /proc/loadavg)"
echo "median libdsrt stage 0: $md ms/step"
echo "median PyTorch DDP:     $mt ms/step"
awk -v d="$md" -v t="$mt" 'BEGIN {printf "ratio libdsrt / PyTorch: %.2f (target <= 0.80)\n", d / t}'
