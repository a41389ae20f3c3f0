#!/usr/bin/env bash
# Builds dsrun and runs the main job: a real 2-rank launch on this machine.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/build.sh
BUILD_DIR=${DSRUN_BUILD_DIR:-build}
exec "$BUILD_DIR/launcher/dsrun" --num_gpus 2 --no_python --tag_output examples/print_rank_env.sh
