#!/usr/bin/env bash
# Builds dsrun and the dsrt Python package, then runs the main job: dsrun starts 2 ranks of examples/train_gpt.py,
# a small character-level GPT (tied embeddings) trained through `import dsrt as deepspeed` with ZeRO stage 2
# (examples/ds_config_gpt.json, Gloo over loopback) on the fortune-cookie corpus of Debian's `fortunes` package.
# Rank 0 prints the loss, samples/s and ETA every 25 steps, the held-out validation loss every 100 steps and a
# generated sample at the end. Extra arguments go to train_gpt.py, e.g. scripts/run_main_job.sh --steps 300
# --save_dir /tmp/gpt (then --load_dir /tmp/gpt --steps 600 resumes). The ranks run the interpreter dsrt was
# built for (dsrun's default; DSRUN_PYTHON=PATH overrides it). DeepSpeed's csv_monitor writes the losses under
# runs/gpt/ (DSRUN_MAIN_JOB_DIR=DIR: DIR/gpt/), where rank 0 then draws loss_curve.png (needs matplotlib).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/build.sh
BUILD_DIR=${DSRUN_BUILD_DIR:-build}
# One intra-op thread per rank: two ranks share this machine's cores.
export OMP_NUM_THREADS=${OMP_NUM_THREADS:-1}
export PYTHONPATH=$BUILD_DIR/python${PYTHONPATH:+:$PYTHONPATH}
exec "$BUILD_DIR/launcher/dsrun" --num_gpus 2 examples/train_gpt.py --monitor_dir "${DSRUN_MAIN_JOB_DIR:-runs}" "$@"
