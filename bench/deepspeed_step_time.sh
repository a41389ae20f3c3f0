#!/usr/bin/env bash
# Step time of dsrt against real DeepSpeed in the same run: the same Python training code (bench/python_peer.py,
# an MLP of 4 x Linear(H, H) with ReLU, MSE, Adam, fp32, 32 samples per rank) and the same ds_config at ZeRO
# stages 0-3 and stage 2 + offload_optimizer, at two sizes. 2 ranks on this machine, Gloo, OMP_NUM_THREADS
# fixed for all. DeepSpeed runs on its CPU accelerator (DS_ACCELERATOR=cpu) started by torchrun; dsrt through
# dsrun. Every round runs every case once, in order, so both see the same machine load; prints every run,
# then per case the median ms/step (rank 0's median over the steps after 2 warm-ups) and dsrt / DeepSpeed.
# Optimizer: without offload DeepSpeed's config Adam is FusedAdam (a CUDA kernel), so "torch_adam" makes it
# torch.optim.Adam there; with offload DeepSpeed uses its DeepSpeedCPUAdam. dsrt always runs its own Adam.
# Usage: bench/deepspeed_step_time.sh [rounds=3] [steps=10]
#   env: BUILD_DIR=build PYTHON=/usr/bin/python3 (dsrt's) DS_PYTHON=.venv-torch2/bin/python (DeepSpeed's)
#        THREADS=1 SIZES="1024 2048" STAGES="z0 z1 z2 z3 z2off"
set -euo pipefail
cd "$(dirname "$0")/.."
ROUNDS=${1:-3}
STEPS=${2:-10}
BUILD_DIR=${BUILD_DIR:-build}
PYTHON=${PYTHON:-/usr/bin/python3}
DS_PYTHON=${DS_PYTHON:-${DSRUN_TORCH2_VENV:-.venv-torch2}/bin/python}
SIZES=${SIZES:-1024 2048}
STAGES=${STAGES:-z0 z1 z2 z3 z2off}
export OMP_NUM_THREADS=${THREADS:-1}
DSRUN=$BUILD_DIR/launcher/dsrun
[ -x "$DSRUN" ] || { echo "deepspeed_step_time.sh: $DSRUN not built (run scripts/build.sh)" >&2; exit 1; }
PYTHONPATH=$BUILD_DIR/python${PYTHONPATH:+:$PYTHONPATH} "$PYTHON" -c 'import dsrt' 2>/dev/null ||
  { echo "deepspeed_step_time.sh: '$PYTHON' cannot import dsrt from $BUILD_DIR/python (run scripts/build.sh)" >&2
    exit 1; }
DS_ACCELERATOR=cpu "$DS_PYTHON" -c 'import deepspeed' 2>/dev/null ||
  { echo "deepspeed_step_time.sh: '$DS_PYTHON' cannot import deepspeed (run scripts/setup_torch2_env.sh or set" \
         "DS_PYTHON)" >&2; exit 1; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# The ds_config of stage $1 (z0 z1 z2 z3 z2off); bucket sizes: one layer's weight, as bench/zero_step_time.sh.
config_of() {
  local stage=${1:1:1} bucket=$(($2 * $2)) extra="" torch_adam=', "torch_adam": true'
  [ "$1" = z2off ] && { extra=', "offload_optimizer": {"device": "cpu"}'; torch_adam=""; }
  cat <<JSON
{ "train_batch_size": 64, "train_micro_batch_size_per_gpu": 32, "steps_per_print": 1000000,
  "optimizer": { "type": "Adam", "params": { "lr": 0.001, "adam_w_mode": false $torch_adam } },
  "zero_optimization": { "stage": $stage, "overlap_comm": true, "contiguous_gradients": true,
    "reduce_bucket_size": $bucket, "allgather_bucket_size": $bucket, "stage3_prefetch_bucket_size": $bucket,
    "stage3_param_persistence_threshold": 0, "stage3_max_live_parameters": $((2 * bucket)) $extra } }
JSON
}

# Runs case $1 (impl:size:stage) once; prints rank 0's median ms/step.
run_once() {
  local impl size stage port=$((20000 + RANDOM % 20000)) out=$tmp/run.out
  IFS=: read -r impl size stage <<< "$1"
  config_of "$stage" "$size" > "$tmp/cfg.json"
  local args=(bench/python_peer.py --impl "$impl" --model mlp --hidden "$size" --layers 4 --steps "$STEPS"
              --deepspeed_config "$tmp/cfg.json")
  if [ "$impl" = deepspeed ]; then
    env -u PYTHONPATH DS_ACCELERATOR=cpu "$DS_PYTHON" -m torch.distributed.run --nproc_per_node 2 \
      --master_port "$port" "${args[@]}" > "$out" 2>&1 || { echo "case $1 failed:" >&2; tail -8 "$out" >&2; return 1; }
  else
    PYTHONPATH=$BUILD_DIR/python${PYTHONPATH:+:$PYTHONPATH} "$DSRUN" --num_gpus 2 --master_port "$port" \
      --python "$PYTHON" "${args[@]}" > "$out" 2>&1 || { echo "case $1 failed:" >&2; tail -8 "$out" >&2; return 1; }
  fi
  sed -e 's/^.*| //' "$out" | awk '/^rank 0 median_step_ms/ {print $4}'
}

# Median of the numbers on stdin; a failed run (empty) is left out, and "-" when none succeeded.
median() {
  grep -E '^[0-9.]+$' | sort -g |
    awk '{a[NR]=$1} END {if (!NR) print "-"; else print (NR % 2) ? a[(NR+1)/2] : (a[NR/2] + a[NR/2+1]) / 2}'
}

cases=()
for size in $SIZES; do for stage in $STAGES; do cases+=("deepspeed:$size:$stage" "dsrt:$size:$stage"); done; done
for ((i = 1; i <= ROUNDS; i++)); do
  for c in "${cases[@]}"; do
    echo "round $i $c: $(run_once "$c" || echo failed)" | tee -a "$tmp/runs"
  done
done

echo "2 ranks, Gloo, Adam, fp32, 4 x Linear(H,H), 32 samples per rank, OMP_NUM_THREADS=$OMP_NUM_THREADS," \
  "$ROUNDS rounds x $STEPS steps, $(date -u '+%Y-%m-%d %H:%M UTC'), load $(cut -d' ' -f1-3 /proc/loadavg)"
ds_version=$(DS_ACCELERATOR=cpu "$DS_PYTHON" -c 'import deepspeed, torch; print(deepspeed.__version__, "on torch",
torch.__version__)' 2>/dev/null | tail -1)
echo "DeepSpeed $ds_version; dsrt on torch $("$PYTHON" -c 'import torch; print(torch.__version__)')"
grep -q 'failed$' "$tmp/runs" && echo "failed runs (left out of the medians): $(grep -c 'failed$' "$tmp/runs")"
printf '%-6s %-6s %14s %12s %12s\n' H stage "DeepSpeed ms" "dsrt ms" dsrt/DS
for size in $SIZES; do
  for stage in $STAGES; do
    ds=$(awk -v c="deepspeed:$size:$stage:" '$3 == c {print $4}' "$tmp/runs" | median)
    ours=$(awk -v c="dsrt:$size:$stage:" '$3 == c {print $4}' "$tmp/runs" | median)
    awk -v h="$size" -v s="$stage" -v d="$ds" -v o="$ours" 'BEGIN {
      if (d == "-" || o == "-") printf "%-6s %-6s %14s %12s %12s\n", h, s, d, o, "-"
      else printf "%-6s %-6s %14.1f %12.1f %12.2f\n", h, s, d, o, o / d }'
  done
done
