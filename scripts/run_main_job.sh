#!/usr/bin/env bash
# Builds dsrun and runs the main job: dsrun starts 2 ranks of examples/train_mlp on this machine, training
# an MLP with ZeRO stage 2 from examples/ds_config_zero2.json (Gloo over loopback). Rank 0 prints
# `step <n> loss <value>` per optimizer step; every rank ends with its model_state_bytes and peak RSS.
# Extra arguments go to train_mlp, e.g. scripts/run_main_job.sh --steps 200 --hidden 512.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/build.sh
BUILD_DIR=${DSRUN_BUILD_DIR:-build}
# One intra-op thread per rank: two ranks share this machine's cores.
export OMP_NUM_THREADS=${OMP_NUM_THREADS:-1}
exec "$BUILD_DIR/launcher/dsrun" --num_gpus 2 --no_python \
  "$BUILD_DIR/examples/train_mlp" --deepspeed_config examples/ds_config_zero2.json \
  --hidden 1024 --layers 4 --steps 100 --seed 42 "$@"
