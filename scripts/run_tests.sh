#!/usr/bin/env bash
# Builds dsrun and runs every test: unit tests, then the integration tests that start real processes.
# Integration tests that need root (network namespaces, sshd, Slurm) say so and fail when not root.
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD_DIR=${DSRUN_BUILD_DIR:-build}
scripts/build.sh
cd "$BUILD_DIR"
ctest --output-on-failure -j "$(nproc)" -LE integration
ctest --output-on-failure -L integration
