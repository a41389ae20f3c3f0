#!/usr/bin/env bash
# One command for the GPU machine (PLATFORM §8, docs/gpu.md): builds libdsrt + the dsrt extension (no
# launcher/agent), runs tests/gpu/ and bench/gpu_step_time.py, and writes every log and result under $OUT.
# Each step has its own timeout, and all of them share one budget (GPU_CHECK_BUDGET_S, default 450 s), so a
# hang costs one step, never the machine's whole lease. A failed build still runs the torch-only benchmark.
# env: OUT                  where logs and results go (default ./gpu_out)
#      GPU_CHECK_DRY_RUN=1  print each step's command instead of running it (to check the script off-GPU)
#      GPU_CHECK_BUDGET_S   the total budget in seconds (default 450)
#      PYTHON               the interpreter with CUDA torch (default /opt/torch/.venv/bin/python3, else python3)
#      GPU_CHECK_BUILD_DIR  the build folder (default build-gpu)
#      GPU_CHECK_BENCH_ARGS extra arguments for bench/gpu_step_time.py (e.g. "--large")
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1
REPO=$PWD
OUT=${OUT:-$REPO/gpu_out}
DRY=${GPU_CHECK_DRY_RUN:-0}
BUDGET=${GPU_CHECK_BUDGET_S:-450}
BUILD=${GPU_CHECK_BUILD_DIR:-$REPO/build-gpu}
BRING=$REPO/third_party/gpu_bring_along
PYLIBS=$BUILD/pylibs
mkdir -p "$OUT"
SUMMARY=$OUT/steps.tsv
: >"$SUMMARY"
rm -f "$OUT/bench.jsonl" "$OUT/tests_gpu.xml"  # results of an earlier run in the same OUT

if [ -z "${PYTHON:-}" ]; then
  PYTHON=/opt/torch/.venv/bin/python3
  [ -x "$PYTHON" ] || PYTHON=$(command -v python3)
fi
# The GPU machine's compiler and CUDA (PLATFORM §8); harmless where they are absent.
[ -d /opt/gcc/bin ] && export PATH=/opt/gcc/bin:$PATH
[ -d /usr/local/cuda/bin ] && export PATH=/usr/local/cuda/bin:$PATH CUDA_HOME=/usr/local/cuda \
  CUDACXX=/usr/local/cuda/bin/nvcc
# Torch's CMake config reads the architectures from the environment; the H100 is 9.0 (no probing needed).
export TORCH_CUDA_ARCH_LIST=${TORCH_CUDA_ARCH_LIST:-9.0}
export CC=${CC:-$(command -v gcc)} CXX=${CXX:-$(command -v g++)}
# libdsrt's compile includes torch's ProcessGroupGloo.hpp, which includes <gloo/...>: PyPI's torch lacks
# those headers, the brought-along libgloo-dev has them. nlohmann_json comes through CMAKE_PREFIX_PATH.
export CPLUS_INCLUDE_PATH=$BRING/include${CPLUS_INCLUDE_PATH:+:$CPLUS_INCLUDE_PATH}
export PYTHONPATH=$BUILD/python:$PYLIBS${PYTHONPATH:+:$PYTHONPATH}
export OMP_NUM_THREADS=${OMP_NUM_THREADS:-8}
START=$SECONDS

# step NAME TIMEOUT_S CMD...: runs CMD with its output in $OUT/NAME.log under min(TIMEOUT_S, budget left);
# records NAME, status and seconds in steps.tsv; returns CMD's status (124: timed out).
step() {
  local name=$1 limit=$2
  shift 2
  local left=$((BUDGET - (SECONDS - START)))
  [ "$limit" -gt "$left" ] && limit=$left
  if [ "$DRY" = 1 ]; then
    printf '[dry] %-10s timeout %4ss: %s\n' "$name" "$limit" "$*"
    printf '%s\tdry-run\t0\n' "$name" >>"$SUMMARY"
    # A function of this script prints the commands it would run (configure's cmake line).
    declare -F "$1" >/dev/null && "$@"
    return 0
  fi
  if [ "$limit" -lt 15 ]; then
    echo "gpu_check: $name NOT RUN: ${left}s of the ${BUDGET}s budget left" | tee "$OUT/$name.log"
    printf '%s\tnot-run(budget)\t0\n' "$name" >>"$SUMMARY"
    return 125
  fi
  echo "gpu_check: $name (timeout ${limit}s): $*"
  local t0=$SECONDS rc
  # `timeout` runs programs, not shell functions: those run in a child bash (export -f below).
  if declare -F "$1" >/dev/null; then
    timeout --kill-after=10 "$limit" bash -c '"$@"' _ "$@" >"$OUT/$name.log" 2>&1
  else
    timeout --kill-after=10 "$limit" "$@" >"$OUT/$name.log" 2>&1
  fi
  rc=$?
  local status=ok
  [ $rc -ne 0 ] && status="FAILED(rc=$rc)"
  [ $rc -eq 124 ] && status="TIMEOUT(${limit}s)"
  printf '%s\t%s\t%s\n' "$name" "$status" "$((SECONDS - t0))" >>"$SUMMARY"
  echo "gpu_check: $name: $status in $((SECONDS - t0))s"
  [ $rc -ne 0 ] && tail -n 25 "$OUT/$name.log"
  return $rc
}

probe_env() {
  nvidia-smi || echo "nvidia-smi failed"
  "$PYTHON" -c "import sys, torch; print(sys.executable, sys.version.split()[0]); print('torch', torch.__version__, \
'cuda', torch.version.cuda, 'available', torch.cuda.is_available(), 'devices', torch.cuda.device_count())"
  cmake --version | head -n 1
  "$CXX" --version | head -n 1
  command -v ninja && ninja --version
  command -v nvcc && nvcc --version | tail -n 1
  ls "$BRING/include" "$BRING/share/cmake"
}

# NCCL's header is in PyPI's nvidia-nccl package; libdsrt's CMake looks in NCCL_HOME (PLATFORM §8).
nccl_home() {
  "$PYTHON" -c "import nvidia.nccl, os; print(os.path.dirname(list(nvidia.nccl.__path__)[0] + '/'))" 2>/dev/null
}

configure() {
  local torch_prefix generator=()
  torch_prefix=$("$PYTHON" -c "import torch.utils; print(torch.utils.cmake_prefix_path)" 2>/dev/null ||
                 echo "<no torch in $PYTHON>")
  command -v ninja >/dev/null && generator=(-G Ninja)
  local run=()
  [ "$DRY" = 1 ] && run=(echo "[dry]   ")
  # A runtime-only build: DSRUN_WITH_LAUNCHER=OFF skips launcher/, agent/, tls/ and
  # proto/ (Boost, protobuf, OpenSSL and libssh are not on the GPU machine); DSRUN_BUILD_EXAMPLES=OFF skips
  # examples/ and bench/'s compiled programs. Warnings are not errors here: a new compiler's first warning
  # must not cost the only GPU run (the CPU builds keep -Werror).
  "${run[@]}" cmake -S "$REPO" -B "$BUILD" "${generator[@]}" -DCMAKE_BUILD_TYPE=Release \
    -DDSRUN_WITH_LAUNCHER=OFF -DDSRUN_BUILD_TESTS=OFF -DDSRUN_BUILD_EXAMPLES=OFF -DDSRUN_WITH_SSH=OFF \
    -DDSRUN_WITH_RUNTIME=ON -DDSRUN_WITH_CUDA=ON -DDSRUN_REQUIRE_NCCL=ON -DDSRUN_WERROR=OFF \
    -DDSRUN_PYTHON_EXECUTABLE="$PYTHON" -DPython3_EXECUTABLE="$PYTHON" -DPython_EXECUTABLE="$PYTHON" \
    -DCMAKE_PREFIX_PATH="$torch_prefix;$BRING" -DCUDAToolkit_ROOT="${CUDA_HOME:-/usr/local/cuda}"
}

export -f probe_env configure
export REPO BUILD BRING PYTHON DRY CXX
NCCL_HOME=$(nccl_home || true)
[ -n "$NCCL_HOME" ] && export NCCL_HOME
echo "gpu_check: OUT=$OUT PYTHON=$PYTHON BUILD=$BUILD NCCL_HOME=${NCCL_HOME:-unset} budget ${BUDGET}s"
[ "$DRY" = 1 ] || [ -d "$BRING/include/gloo" ] ||
  echo "gpu_check: WARNING: $BRING/include/gloo missing: run scripts/gpu_bring_along.sh and carry the folder"

step env 30 probe_env
step wheels 60 "$PYTHON" "$REPO/scripts/gpu_install_wheels.py" "$BRING/wheels" "$PYLIBS"
built=0
if step configure 120 configure && step build 240 cmake --build "$BUILD" --target dsrt_python -j "$(nproc)" &&
    step import 60 "$PYTHON" -c "import torch, dsrt; print('dsrt', dsrt.__file__, 'torch', torch.__version__)"; then
  built=1
fi

bench_args=(--out "$OUT/bench.jsonl")
if [ "$built" = 1 ] || [ "$DRY" = 1 ]; then
  # DSRT_GPU_REQUIRED=1: a missing GPU or dsrt is an error here, never a quiet skip.
  export DSRT_GPU_REQUIRED=1
  # At most 240 s, and never the last 150 s of the budget: those are the benchmark's.
  tests_limit=$((BUDGET - (SECONDS - START) - 150))
  [ "$tests_limit" -gt 240 ] && tests_limit=240
  step tests "$tests_limit" "$PYTHON" -m pytest "$REPO/tests/gpu" -v -rs -p no:cacheprovider \
    --junitxml="$OUT/tests_gpu.xml"
else
  echo "gpu_check: tests NOT RUN: dsrt did not build or import (see configure/build/import logs)"
  printf 'tests\tnot-run(no dsrt)\t0\n' >>"$SUMMARY"
  bench_args+=(--no-dsrt)
fi
# The benchmark stops starting cases 20 s before its step's timeout, so it always prints its table.
bench_limit=$((BUDGET - (SECONDS - START)))
[ "$bench_limit" -gt 400 ] && bench_limit=400
# shellcheck disable=SC2086  # GPU_CHECK_BENCH_ARGS is a list of words on purpose
step bench "$bench_limit" "$PYTHON" "$REPO/bench/gpu_step_time.py" "${bench_args[@]}" --budget $((bench_limit - 20)) \
  ${GPU_CHECK_BENCH_ARGS:-}

[ "$DRY" = 1 ] && exit 0
"$PYTHON" "$REPO/scripts/gpu_summary.py" "$OUT" | tee "$OUT/summary.txt"
# Non-zero when any step failed, timed out or was not run, so the caller sees it without reading the table.
! cut -f2 "$SUMMARY" | grep -qv '^ok$'
