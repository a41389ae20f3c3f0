#!/usr/bin/env bash
# Builds dsrun and runs every test: unit tests, then the integration tests that start real processes, against
# Debian's torch 1.13; then the torch 2.x leg (scripts/run_tests_torch2.sh: `pip install .` against PyPI's
# torch, the runtime's and Python package's suites, the DeepSpeed comparisons, the installed dsrun).
# Integration tests that need root (network namespaces, sshd, Slurm) say so and fail when not root.
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD_DIR=${DSRUN_BUILD_DIR:-build}
scripts/build.sh
cd "$BUILD_DIR"
ctest --output-on-failure -j "$(nproc)" -LE integration
ctest --output-on-failure -L integration
cd - >/dev/null
scripts/run_tests_torch2.sh
