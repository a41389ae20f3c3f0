#!/usr/bin/env bash
# Step time and memory of ZeRO stages 1-3, offload and mixed precision against stage 0 on the same model:
# dsrun starts 2 ranks of examples/train_mlp per configuration; configurations alternate round by round
# (0, 1, 2, 3, ... then again) so all see the same machine load. Prints every run, then per configuration
# the median ms/step, its ratio to stage 0, model_state_bytes per rank (ZeRO paper accounting of the tensors
# held, host bytes of offloaded state separately), peak RSS per rank, and DeepSpeed's estimate
# (build/runtime/estimate/ds_estimate) for the same parameter count on 2 ranks of one node.
# Usage: bench/zero_step_time.sh [rounds=3] [steps=12]
#   env: BUILD_DIR=build HIDDEN=2048 LAYERS=4 THREADS=1 CONFIGS="z0 z1 z2 z3 z2off z3off z2bf16 z2fp16"
#        BUCKET=elements per reduce/all-gather bucket and stage-3 prefetch (default: one layer's weight; DeepSpeed's
#        defaults, 5e8 / 5e7, exceed this whole model, so everything would be gathered and bucketed at once)
set -euo pipefail
cd "$(dirname "$0")/.."
ROUNDS=${1:-3}
STEPS=${2:-12}
BUILD_DIR=${BUILD_DIR:-build}
HIDDEN=${HIDDEN:-2048}
LAYERS=${LAYERS:-4}
CONFIGS=${CONFIGS:-z0 z1 z2 z3 z2off z3off z2bf16 z2fp16}
BUCKET=${BUCKET:-$((HIDDEN * HIDDEN))}
# glibc raises its mmap threshold to the size of each freed large block (up to 32 MiB), after which the
# stage-3 gather and gradient buffers (one layer each, allocated and freed per layer) come from the heap
# and freed ones are retained: peak RSS then measures allocator retention (~650 MB for z3 here) rather
# than live memory (~450 MB). A fixed threshold keeps large blocks mmapped; MALLOC_MMAP_THRESHOLD_= (empty)
# measures glibc's default behaviour instead.
export MALLOC_MMAP_THRESHOLD_=${MALLOC_MMAP_THRESHOLD_-1048576}
[ -n "$MALLOC_MMAP_THRESHOLD_" ] || unset MALLOC_MMAP_THRESHOLD_
export OMP_NUM_THREADS=${THREADS:-1}
TRAIN=$BUILD_DIR/examples/train_mlp DSRUN=$BUILD_DIR/launcher/dsrun EST=$BUILD_DIR/runtime/estimate/ds_estimate
for b in "$TRAIN" "$DSRUN" "$EST"; do
  [ -x "$b" ] || { echo "zero_step_time.sh: $b not built (run scripts/build.sh)" >&2; exit 1; }
done
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# The ds_config of configuration $1: Adam, 32 samples per rank, no clipping.
config_of() {
  local stage=0 extra=""
  case $1 in
    z0) stage=0 ;; z1) stage=1 ;; z2) stage=2 ;; z3) stage=3 ;;
    z2off) stage=2 extra=', "offload_optimizer": {"device": "cpu", "pin_memory": true}' ;;
    z3off) stage=3 extra=', "offload_optimizer": {"device": "cpu", "pin_memory": true}, "offload_param": {"device": "cpu"}' ;;
    z2bf16) stage=2 ;; z2fp16) stage=2 ;;
    *) echo "zero_step_time.sh: unknown configuration '$1'" >&2; exit 2 ;;
  esac
  local precision=""
  [ "$1" = z2bf16 ] && precision='"bf16": {"enabled": true},'
  [ "$1" = z2fp16 ] && precision='"fp16": {"enabled": true, "initial_scale_power": 12},'
  cat <<JSON
{ "train_batch_size": 64, "train_micro_batch_size_per_gpu": 32, "steps_per_print": 1000000, $precision
  "optimizer": { "type": "Adam", "params": { "lr": 0.0001 } },
  "zero_optimization": { "stage": $stage, "overlap_comm": true, "contiguous_gradients": true,
    "reduce_bucket_size": $BUCKET, "allgather_bucket_size": $BUCKET, "stage3_prefetch_bucket_size": $BUCKET,
    "stage3_max_live_parameters": $((2 * BUCKET)), "stage3_param_persistence_threshold": $HIDDEN $extra } }
JSON
}

# Runs configuration $1 once; prints "ms bytes0 bytes1 rss0 rss1 host0".
run_once() {
  local port=$((20000 + RANDOM % 20000)) out=$tmp/$1.out
  config_of "$1" > "$tmp/$1.json"
  if ! "$DSRUN" --num_gpus 2 --master_port "$port" --no_python "$TRAIN" --deepspeed_config "$tmp/$1.json" \
       --hidden "$HIDDEN" --layers "$LAYERS" --steps "$STEPS" --seed 42 > "$out" 2>&1; then
    echo "zero_step_time.sh: configuration $1 failed:" >&2; tail -5 "$out" >&2; return 1
  fi
  sed -e 's/^.*| //' "$out" | awk '
    /^median_step_ms/ {ms = $2}
    /^rank [0-9]+ model_state_bytes/ {b[$2] = $4; r[$2] = $6; h[$2] = ($7 == "offloaded_state_bytes") ? $8 : 0}
    END {print ms, b[0], b[1], r[0], r[1], h[0]}'
}

median() { sort -g | awk '{a[NR]=$1} END {print (NR % 2) ? a[(NR+1)/2] : (a[NR/2] + a[NR/2+1]) / 2}'; }

declare -A ok
for c in $CONFIGS; do ok[$c]=1; done
for ((i = 1; i <= ROUNDS; i++)); do
  for c in $CONFIGS; do
    [ "${ok[$c]}" = 1 ] || continue
    if line=$(run_once "$c"); then
      echo "round $i $c: $line" | tee -a "$tmp/runs"
    else
      ok[$c]=0
    fi
  done
done

params=$((LAYERS * (HIDDEN * HIDDEN + HIDDEN)))
echo
echo "model: $LAYERS x Linear($HIDDEN,$HIDDEN) = $params parameters, Adam, 2 ranks x 32 samples, buckets/prefetch $BUCKET elements, MALLOC_MMAP_THRESHOLD_=${MALLOC_MMAP_THRESHOLD_:-glibc default}, OMP_NUM_THREADS=$OMP_NUM_THREADS, load $(cut -d' ' -f1-3 /proc/loadavg)"
base=$(awk '$3 == "z0:" {print $4}' "$tmp/runs" | median)
printf '%-8s %10s %8s %14s %14s %10s %10s\n' config ms/step vs_z0 state_B/rank host_B/rank rss0_MB rss1_MB
for c in $CONFIGS; do
  [ "${ok[$c]}" = 1 ] || { printf '%-8s failed (see above)\n' "$c"; continue; }
  ms=$(awk -v c="$c:" '$3 == c {print $4}' "$tmp/runs" | median)
  awk -v c="$c:" -v ms="$ms" -v base="$base" '$3 == c {b = $5; h = $9; r0 = $7; r1 = $8}
    END {printf "%-8s %10.1f %8.2f %14d %14d %10.0f %10.0f\n", substr(c, 1, length(c) - 1), ms, ms / base, b, h, r0, r1}' "$tmp/runs"
done
echo
echo "DeepSpeed's estimate for $params parameters on 1 node x 2 ranks (ds_estimate, fp16 params + fp32 Adam):"
"$EST" --params "$params" --num_gpus_per_node 2 --stage 2
"$EST" --params "$params" --largest_layer_params $((HIDDEN * HIDDEN + HIDDEN)) --num_gpus_per_node 2 --stage 3
