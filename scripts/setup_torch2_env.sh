#!/usr/bin/env bash
# Creates (or updates) the virtual environment with torch 2.x from PyPI that libdsrt and the dsrt package
# are also built and tested against (docs/install.md "torch 2.x from PyPI"), with real DeepSpeed as the
# peer of the comparison tests and benchmarks. Idempotent; needs network access to PyPI.
# Usage: scripts/setup_torch2_env.sh [--torch VERSION]     (default: the newest release tested, below)
# env:   DSRUN_TORCH2_VENV   where the environment lives (default: <repo>/.venv-torch2)
#        DSRUN_HF_VENV       the Hugging Face tests' environment without DeepSpeed (default: <that>-hf)
set -euo pipefail
cd "$(dirname "$0")/.."

# The newest torch PyPI served when this was last checked (2026-11-26), and DeepSpeed's newest release.
TORCH_VERSION=2.15.0
DEEPSPEED_VERSION=0.19.8
while [ $# -gt 0 ]; do
  case $1 in
    --torch) TORCH_VERSION=$2; shift 2 ;;
    *) echo "setup_torch2_env.sh: unknown argument '$1' (usage: --torch VERSION)" >&2; exit 2 ;;
  esac
done
VENV=${DSRUN_TORCH2_VENV:-$PWD/.venv-torch2}

# The interpreter whose headers python3-dev installs (the extension compiles against them).
PYTHON=/usr/bin/python3
if ! "$PYTHON" -c "import venv, ensurepip" 2>/dev/null; then
  echo "setup_torch2_env.sh: $PYTHON cannot create virtual environments: apt-get install python3-venv" >&2
  exit 1
fi
[ -x "$VENV/bin/python" ] || "$PYTHON" -m venv "$VENV"
pip() { "$VENV/bin/python" -m pip --disable-pip-version-check -q "$@"; }

# torch first and pinned, so DeepSpeed's own requirement cannot move it.
have=$("$VENV/bin/python" -c "import torch; print(torch.__version__.split('+')[0])" 2>/dev/null || true)
if [ "$have" != "$TORCH_VERSION" ]; then
  echo "setup_torch2_env.sh: installing torch==$TORCH_VERSION into $VENV"
  pip install "torch==$TORCH_VERSION"
fi
# Build tools of `pip install --no-build-isolation .` (pyproject.toml), the test runner, and the peer.
# pybind11 is installed because users have it: dsrt must build with torch's own pybind11 regardless.
pip install "scikit-build-core>=0.10" "pybind11>=2.12" pytest numpy "torch==$TORCH_VERSION" \
  "deepspeed==$DEEPSPEED_VERSION"
# The writers the ds_config's monitor blocks use and the tests read back (tests/python/test_monitors.py),
# and safetensors for zero_to_fp32 --safe_serialization; pinned to what was tested.
pip install "tensorboard==2.21.0" "wandb==0.30.0" "safetensors==0.8.0"
# The Hugging Face tests (tests/hf, docs/hf.md): transformers and Accelerate, pinned, beside real DeepSpeed in
# $VENV (the peer) and in a second environment WITHOUT DeepSpeed, where scripts/run_tests_torch2.sh installs dsrt
# and its `deepspeed` compatibility distribution (python/deepspeed_compat): the two `deepspeed`s cannot share one.
TRANSFORMERS_VERSION=5.24.0
ACCELERATE_VERSION=1.15.0
HF_VENV=${DSRUN_HF_VENV:-$VENV-hf}
pip install "transformers==$TRANSFORMERS_VERSION" "accelerate==$ACCELERATE_VERSION"
[ -x "$HF_VENV/bin/python" ] || "$PYTHON" -m venv "$HF_VENV"
hf_have=$("$HF_VENV/bin/python" -c "import torch; print(torch.__version__.split('+')[0])" 2>/dev/null || true)
if [ "$hf_have" != "$TORCH_VERSION" ]; then
  echo "setup_torch2_env.sh: installing torch==$TORCH_VERSION into $HF_VENV (from pip's cache after the first)"
  "$HF_VENV/bin/python" -m pip --disable-pip-version-check -q install "torch==$TORCH_VERSION"
fi
"$HF_VENV/bin/python" -m pip --disable-pip-version-check -q install "scikit-build-core>=0.10" pytest numpy \
  "torch==$TORCH_VERSION" "transformers==$TRANSFORMERS_VERSION" "accelerate==$ACCELERATE_VERSION"
echo "setup_torch2_env.sh: $VENV has torch $("$VENV/bin/python" -c 'import torch; print(torch.__version__)') and" \
  "deepspeed $("$VENV/bin/python" -c 'import importlib.metadata as m; print(m.version("deepspeed"))')"
