#!/usr/bin/env bash
# Step time, page faults and memory of ZeRO stages 1-3, offload and mixed precision against stage 0 on the same
# model, for every model size in SIZES: dsrun starts 2 ranks of examples/train_mlp per configuration;
# configurations and sizes alternate round by round (1024: z0 z1 ..., 2048: z0 z1 ..., then again) so all see the
# same machine load. Prints every run, then per size and configuration the median ms/step, its ratio to stage 0,
# rank 0's median minor page faults per step (getrusage ru_minflt: a buffer that is allocated and handed back to
# the kernel every step faults again each step), its median CPU ms per step (user + system, all threads: on a
# shared machine far steadier than wall time), model_state_bytes per rank (ZeRO paper accounting of the tensors
# held, host bytes of offloaded state separately) and peak RSS per rank; then DeepSpeed's estimate
# (build/runtime/estimate/ds_estimate) for the largest size on 2 ranks of one node.
# Configuration `ddp` is PyTorch's own DDP (bench/ddp_peer.py on /usr/bin/python3, Gloo, same model and batch;
# skipped with a message where that python has no torch).
# Usage: bench/zero_step_time.sh [rounds=3] [steps=12]
#   env: BUILD_DIR=build SIZES="1024 2048" LAYERS=4 THREADS=1 CONFIGS="z0 z1 z2 z3 z2off z3off z2bf16 z2fp16 ddp"
#        BUCKET=elements per reduce/all-gather bucket and stage-3 prefetch (default: one layer's weight; DeepSpeed's
#        defaults, 5e8 / 5e7, exceed this whole model, so everything would be gathered and bucketed at once)
#        MALLOC_*: passed through; unset by default, so glibc behaves as it does for a user (see below)
#        BASELINE_BUILD=another build dir (e.g. of the previous commit): every dsrt configuration also runs with
#        its train_mlp and dsrun, right after the current one, reported as "<config>@base" (before/after of a change
#        under the same load)
set -euo pipefail
cd "$(dirname "$0")/.."
ROUNDS=${1:-3}
STEPS=${2:-12}
BUILD_DIR=${BUILD_DIR:-build}
SIZES=${SIZES:-${HIDDEN:-1024 2048}}
LAYERS=${LAYERS:-4}
CONFIGS=${CONFIGS:-z0 z1 z2 z3 z2off z3off z2bf16 z2fp16 ddp}
# glibc's default is what a user gets, so it is what step time and faults are measured under. Its mmap threshold
# grows to the size of each freed large block (up to 32 MiB), after which freed blocks stay in the heap: peak RSS
# then includes allocator retention (stage 3's per-layer gather and gradient buffers: ~650 MB against ~450 MB
# live for 4 x 2048). MALLOC_MMAP_THRESHOLD_=1048576 keeps large blocks mmapped to measure live memory instead,
# at the price of faulting every large temporary in again each step.
export OMP_NUM_THREADS=${THREADS:-1}
TRAIN=$BUILD_DIR/examples/train_mlp DSRUN=$BUILD_DIR/launcher/dsrun EST=$BUILD_DIR/runtime/estimate/ds_estimate
BASELINE_BUILD=${BASELINE_BUILD:-}
for b in "$TRAIN" "$DSRUN" "$EST" ${BASELINE_BUILD:+"$BASELINE_BUILD/examples/train_mlp" "$BASELINE_BUILD/launcher/dsrun"}; do
  [ -x "$b" ] || { echo "zero_step_time.sh: $b not built (run scripts/build.sh)" >&2; exit 1; }
done
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# The ds_config of configuration $1 for hidden size $2: Adam, 32 samples per rank, no clipping.
config_of() {
  local stage=0 extra="" hidden=$2 bucket=${BUCKET:-$(($2 * $2))}
  case $1 in
    z0) stage=0 ;; z1) stage=1 ;; z2) stage=2 ;; z3) stage=3 ;;
    z2off) stage=2 extra=', "offload_optimizer": {"device": "cpu", "pin_memory": true}' ;;
    z3off) stage=3 extra=', "offload_optimizer": {"device": "cpu", "pin_memory": true}, "offload_param": {"device": "cpu"}' ;;
    z2bf16) stage=2 ;; z2fp16) stage=2 ;;
    *) echo "zero_step_time.sh: unknown configuration '$1' (z0 z1 z2 z3 z2off z3off z2bf16 z2fp16 ddp)" >&2; exit 2 ;;
  esac
  local precision=""
  [ "$1" = z2bf16 ] && precision='"bf16": {"enabled": true},'
  [ "$1" = z2fp16 ] && precision='"fp16": {"enabled": true, "initial_scale_power": 12},'
  cat <<JSON
{ "train_batch_size": 64, "train_micro_batch_size_per_gpu": 32, "steps_per_print": 1000000, $precision
  "optimizer": { "type": "Adam", "params": { "lr": 0.0001 } },
  "zero_optimization": { "stage": $stage, "overlap_comm": true, "contiguous_gradients": true,
    "reduce_bucket_size": $bucket, "allgather_bucket_size": $bucket, "stage3_prefetch_bucket_size": $bucket,
    "stage3_max_live_parameters": $((2 * bucket)), "stage3_param_persistence_threshold": $hidden $extra } }
JSON
}

# PyTorch DDP (bench/ddp_peer.py) on 2 ranks with hidden size $1; prints "ms faults cpu_ms 0 0 0 0 0".
run_ddp() {
  local port=$((20000 + RANDOM % 20000)) out=$tmp/ddp.out rc=0 pids=()
  for r in 0 1; do
    RANK=$r LOCAL_RANK=$r WORLD_SIZE=2 MASTER_ADDR=127.0.0.1 MASTER_PORT=$port /usr/bin/python3 bench/ddp_peer.py \
      --hidden "$1" --layers "$LAYERS" --micro_batch 32 --steps "$STEPS" --seed 42 --lr 0.0001 > "$out.$r" 2>&1 &
    pids+=($!)
  done
  for p in "${pids[@]}"; do wait "$p" || rc=1; done
  if [ $rc -ne 0 ]; then
    echo "zero_step_time.sh: configuration ddp failed:" >&2; tail -5 "$out.0" "$out.1" >&2; return 1
  fi
  awk '/^median_step_ms/ {ms = $2} /^median_step_minor_faults/ {f = $2} /^median_step_cpu_ms/ {c = $2}
       END {print ms, f, c, 0, 0, 0, 0, 0}' "$out.0"
}

# Runs configuration $1 (suffix @base: with BASELINE_BUILD's binaries) at hidden size $2 once; prints
# "ms faults cpu_ms bytes0 bytes1 rss0 rss1 host0".
run_once() {
  [ "$1" = ddp ] && { run_ddp "$2"; return; }
  local port=$((20000 + RANDOM % 20000)) out=$tmp/$1.out config=${1%@base} dsrun=$DSRUN train=$TRAIN
  if [ "$config" != "$1" ]; then
    dsrun=$BASELINE_BUILD/launcher/dsrun train=$BASELINE_BUILD/examples/train_mlp
  fi
  config_of "$config" "$2" > "$tmp/$1.json"
  if ! "$dsrun" --num_gpus 2 --master_port "$port" --no_python "$train" --deepspeed_config "$tmp/$1.json" \
       --hidden "$2" --layers "$LAYERS" --steps "$STEPS" --seed 42 > "$out" 2>&1; then
    echo "zero_step_time.sh: configuration $1 (hidden $2) failed:" >&2; tail -5 "$out" >&2; return 1
  fi
  sed -e 's/^.*| //' "$out" | awk '
    /^median_step_ms/ {ms = $2}
    /^median_step_minor_faults/ {f = $2}
    /^median_step_cpu_ms/ {c = $2}
    /^rank [0-9]+ model_state_bytes/ {b[$2] = $4; r[$2] = $6; h[$2] = ($7 == "offloaded_state_bytes") ? $8 : 0}
    END {print ms, f, c, b[0], b[1], r[0], r[1], h[0]}'
}

median() { sort -g | awk '{a[NR]=$1} END {print (NR % 2) ? a[(NR+1)/2] : (a[NR/2] + a[NR/2+1]) / 2}'; }

if [ -n "$BASELINE_BUILD" ]; then
  with_base=""
  for c in $CONFIGS; do
    with_base+=" $c"
    [ "$c" = ddp ] || with_base+=" $c@base"
  done
  CONFIGS=$with_base
fi
declare -A ok
for h in $SIZES; do for c in $CONFIGS; do ok[$h.$c]=1; done; done
if [[ " $CONFIGS " == *" ddp "* ]] && ! /usr/bin/python3 -c 'import torch.distributed' 2>/dev/null; then
  echo "zero_step_time.sh: skipping ddp: /usr/bin/python3 has no torch (apt-get install python3-torch)" >&2
  for h in $SIZES; do ok[$h.ddp]=0; done
fi
loads=()
for ((i = 1; i <= ROUNDS; i++)); do
  for h in $SIZES; do
    for c in $CONFIGS; do
      [ "${ok[$h.$c]}" = 1 ] || continue
      if line=$(run_once "$c" "$h"); then
        echo "round $i $h $c: $line" | tee -a "$tmp/runs"
      else
        ok[$h.$c]=0
      fi
    done
  done
  loads+=("$(cut -d' ' -f1 /proc/loadavg)")
done

echo
echo "2 ranks x 32 samples, Adam, OMP_NUM_THREADS=$OMP_NUM_THREADS, MALLOC_MMAP_THRESHOLD_=${MALLOC_MMAP_THRESHOLD_:-glibc default}," \
     "$ROUNDS interleaved rounds of $STEPS steps, medians; 1-min load after each round: ${loads[*]} ($(nproc) cores)"
for h in $SIZES; do
  params=$((LAYERS * (h * h + h)))
  echo
  echo "model: $LAYERS x Linear($h,$h) = $params parameters, buckets/prefetch ${BUCKET:-$((h * h))} elements"
  base=$(awk -v h="$h" '$3 == h && $4 == "z0:" {print $5}' "$tmp/runs" | median)
  printf '%-8s %10s %8s %12s %10s %14s %14s %10s %10s\n' config ms/step vs_z0 faults/step cpu_ms \
    state_B/rank host_B/rank rss0_MB rss1_MB
  for c in $CONFIGS; do
    [ "${ok[$h.$c]}" = 1 ] || { printf '%-8s failed or skipped (see above)\n' "$c"; continue; }
    col() { awk -v h="$h" -v c="$c:" -v k="$1" '$3 == h && $4 == c {print $k}' "$tmp/runs" | median; }
    ms=$(col 5) faults=$(col 6) cpu=$(col 7)
    awk -v h="$h" -v c="$c:" -v ms="$ms" -v f="$faults" -v cpu="$cpu" -v base="${base:-0}" '
      $3 == h && $4 == c {b = $8; hb = $12; r0 = $10; r1 = $11}
      END {ratio = "-"; if (base > 0) ratio = sprintf("%.2f", ms / base)
           printf "%-8s %10.1f %8s %12.0f %10.1f %14d %14d %10.0f %10.0f\n", substr(c, 1, length(c) - 1), ms, ratio, f,
                  cpu, b, hb, r0, r1}' "$tmp/runs"
  done
done
echo
params=$((LAYERS * (h * h + h)))
echo "DeepSpeed's estimate for $params parameters on 1 node x 2 ranks (ds_estimate, fp16 params + fp32 Adam):"
"$EST" --params "$params" --num_gpus_per_node 2 --stage 2
"$EST" --params "$params" --largest_layer_params $((h * h + h)) --num_gpus_per_node 2 --stage 3
