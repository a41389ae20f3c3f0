#!/usr/bin/env bash
# The torch 2.x leg of the tests (scripts/run_tests.sh runs it after the Debian torch 1.13 leg):
#  1. `pip install --no-build-isolation .` into the PyPI environment of setup_torch2_env.sh, which builds
#     libdsrt, dsrt._C and the launcher against that torch (a CUDA build: the NCCL path is compiled and
#     linked, warnings as errors) in build-torch2/, with the runtime's and the Python package's tests;
#  2. those suites against it (ctest), the DeepSpeed comparisons among them;
#  3. the installed package as a user has it: `import dsrt` with no PYTHONPATH, and a 2-rank training run
#     through the installed dsrun.
#  4. Hugging Face's Trainer and Accelerate on dsrt against real DeepSpeed (tests/hf): the same wheel and the
#     `deepspeed` compatibility distribution go into setup_torch2_env.sh's second environment, without DeepSpeed.
# env: DSRUN_TORCH2_VENV (default <repo>/.venv-torch2), DSRUN_TORCH2_BUILD_DIR (default build-torch2),
#      DSRUN_HF_VENV (default <DSRUN_TORCH2_VENV>-hf)
set -euo pipefail
cd "$(dirname "$0")/.."
VENV=${DSRUN_TORCH2_VENV:-$PWD/.venv-torch2}
BUILD_DIR=${DSRUN_TORCH2_BUILD_DIR:-build-torch2}
PY=$VENV/bin/python
HF_VENV=${DSRUN_HF_VENV:-$VENV-hf}
if ! "$HF_VENV/bin/python" -c "import transformers, accelerate" 2>/dev/null; then
  echo "run_tests_torch2.sh: no transformers/accelerate in $HF_VENV: run scripts/setup_torch2_env.sh" >&2
  exit 1
fi
if ! "$PY" -c "import torch" 2>/dev/null; then
  echo "run_tests_torch2.sh: no torch in $VENV: run scripts/setup_torch2_env.sh (scripts/install_deps.sh does)" >&2
  exit 1
fi
echo "run_tests_torch2.sh: torch $("$PY" -c 'import torch; print(torch.__version__)') in $VENV"

# NCCL's header comes with PyPI's torch (nvidia-nccl); libdsrt's CMake looks in NCCL_HOME.
nccl_home=$("$PY" -c "import nvidia.nccl, os; print(os.path.dirname(nvidia.nccl.__path__[0] + '/'))" 2>/dev/null || true)
if [ -n "$nccl_home" ] && [ -f "$nccl_home/include/nccl.h" ]; then
  export NCCL_HOME=$nccl_home
fi

"$PY" -m pip install --disable-pip-version-check --no-build-isolation --no-deps . \
  --config-settings=build-dir="$BUILD_DIR" \
  --config-settings=cmake.define.DSRUN_BUILD_TESTS=ON --config-settings=cmake.define.DSRUN_RUNTIME_TESTS_ONLY=ON \
  --config-settings=cmake.define.DSRUN_BUILD_EXAMPLES=ON --config-settings=cmake.define.DSRUN_WERROR=ON \
  --config-settings=cmake.define.DSRUN_WITH_LAUNCHER=ON --config-settings=cmake.define.DSRUN_WITH_CUDA=ON --config-settings=cmake.define.DSRUN_REQUIRE_NCCL=ON \
  --config-settings=cmake.define.DSRUN_HF_PYTHON="$HF_VENV/bin/python" --config-settings=cmake.define.DSRUN_HF_PEER_PYTHON="$PY"

# The Hugging Face environment gets the same build as a wheel (the build folder is up to date: nothing compiles;
# the wheel's libraries find torch relative to themselves) and the compatibility distribution.
wheels=$(mktemp -d)
"$PY" -m pip wheel --disable-pip-version-check -q --no-build-isolation --no-deps . -w "$wheels" \
  --config-settings=build-dir="$BUILD_DIR" \
  --config-settings=cmake.define.DSRUN_BUILD_TESTS=ON --config-settings=cmake.define.DSRUN_RUNTIME_TESTS_ONLY=ON \
  --config-settings=cmake.define.DSRUN_BUILD_EXAMPLES=ON --config-settings=cmake.define.DSRUN_WERROR=ON \
  --config-settings=cmake.define.DSRUN_WITH_LAUNCHER=ON --config-settings=cmake.define.DSRUN_WITH_CUDA=ON --config-settings=cmake.define.DSRUN_REQUIRE_NCCL=ON \
  --config-settings=cmake.define.DSRUN_HF_PYTHON="$HF_VENV/bin/python" --config-settings=cmake.define.DSRUN_HF_PEER_PYTHON="$PY"
"$HF_VENV/bin/python" -m pip install --disable-pip-version-check -q --no-deps --force-reinstall "$wheels"/dsrt-*.whl
"$HF_VENV/bin/python" -m pip install --disable-pip-version-check -q --no-build-isolation --no-deps --force-reinstall \
  python/deepspeed_compat
rm -rf "$wheels"

# The runtime's C++ tests and the Python package's one-process suites, then the DeepSpeed comparisons. The
# multi-rank Python suites (label integration) run in the torch 1.13 leg; CI's 90 minutes do not hold both.
(cd "$BUILD_DIR" && ctest --output-on-failure -j "$(nproc)" -LE integration \
  && ctest --output-on-failure -R '^deepspeed_peer_' && ctest --output-on-failure -R '^hf_')

# As installed: from a directory outside the tree, nothing on PYTHONPATH.
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
(cd "$work" && env -u PYTHONPATH "$PY" -c "import dsrt, torch; print('import dsrt:', dsrt.__file__, 'torch', torch.__version__)")
cp examples/train_mlp.py examples/ds_config_zero2.json "$work/"
log=$work/train.log
if ! (cd "$work" && env -u PYTHONPATH OMP_NUM_THREADS=1 "$VENV/bin/dsrun" --num_gpus 2 train_mlp.py \
        --hidden 64 --layers 2 --steps 3 --deepspeed_config ds_config_zero2.json) >"$log" 2>&1; then
  cat "$log"
  echo "run_tests_torch2.sh: FAILED: 2-rank training through the installed dsrun" >&2
  exit 1
fi
grep -q "^step 3 loss" "$log" || { cat "$log"; echo "run_tests_torch2.sh: FAILED: no 'step 3 loss' line" >&2; exit 1; }
echo "run_tests_torch2.sh: installed dsrun trained 2 ranks: $(grep '^step 3 loss' "$log")"
