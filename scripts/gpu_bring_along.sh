#!/usr/bin/env bash
# Fills third_party/gpu_bring_along/ with what scripts/gpu_check.sh needs on the GPU machine, which has no
# apt and no network (docs/gpu.md, PLATFORM §8). Run it here (network), then carry the folder with the
# device tool: it is gitignored, so it travels only when named in `carry`.
#   include/nlohmann/, share/cmake/nlohmann_json/   nlohmann-json3-dev (header-only + its CMake config)
#   include/gloo/                                    libgloo-dev's headers: torch's ProcessGroupGloo.hpp
#                                                    includes <gloo/...>, which PyPI's torch does not ship
#   wheels/                                          DeepSpeed 0.19.8 (the benchmark's peer), its runtime
#                                                    requirements, and pytest, for Python 3.12 x86_64
# Idempotent: an existing folder is replaced. Usage: scripts/gpu_bring_along.sh [--no-wheels]
# env: DSRUN_BRING_ALONG_DIR (default third_party/gpu_bring_along), PYTHON (an interpreter with torch and
#      pip, to build DeepSpeed's wheel; default .venv-torch2/bin/python)
set -euo pipefail
cd "$(dirname "$0")/.."
DEST=${DSRUN_BRING_ALONG_DIR:-$PWD/third_party/gpu_bring_along}
PYTHON=${PYTHON:-${DSRUN_TORCH2_VENV:-$PWD/.venv-torch2}/bin/python}
WHEELS=1
[ "${1:-}" = "--no-wheels" ] && WHEELS=0

# The GPU machine's interpreter (PLATFORM §8): CPython 3.12 on x86_64 glibc.
PY_TAG=3.12
PY_ABI=cp312
# DeepSpeed 0.19.8's install_requires (requirements/requirements.txt) with the versions that
# scripts/setup_torch2_env.sh resolves, pydantic's own requirements, and pytest with its requirements.
# numpy (16 MB of the ~25 MB) is there because PyPI's torch does not require it and DeepSpeed imports it;
# gpu_install_wheels.py unpacks only what the machine lacks.
DEEPSPEED=deepspeed==0.19.8
PURE=(einops==0.8.2 hjson==3.1.0 packaging==26.4 py-cpuinfo==9.0.0 pydantic==2.14.4 annotated-types==0.8.0
      typing-inspection==0.4.5 typing-extensions==4.16.0 tqdm==4.70.1 pytest==9.2.0 pluggy==1.7.0
      iniconfig==2.3.1 pygments==2.21.0)
BINARY=(msgpack==1.2.4 psutil==7.2.2 pydantic-core==2.50.5 ninja==1.13.2 numpy==2.4.6)

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
rm -rf "$DEST"
mkdir -p "$DEST/include" "$DEST/share/cmake"

(cd "$tmp" && apt-get download nlohmann-json3-dev libgloo-dev >/dev/null)
for deb in "$tmp"/*.deb; do
  dpkg -x "$deb" "$tmp/root"
done
cp -r "$tmp/root/usr/include/nlohmann" "$tmp/root/usr/include/gloo" "$DEST/include/"
cp -r "$tmp/root/usr/share/cmake/nlohmann_json" "$DEST/share/cmake/"
# nlohmann_jsonTargets.cmake locates the headers relative to its own folder (3 levels up = $DEST), so the
# config works from this prefix unchanged; check that assumption instead of trusting it.
grep -q 'get_filename_component(_IMPORT_PREFIX' "$DEST/share/cmake/nlohmann_json/nlohmann_jsonTargets.cmake" ||
  { echo "gpu_bring_along.sh: nlohmann_json's CMake config is not relocatable" >&2; exit 1; }

if [ "$WHEELS" = 1 ]; then
  mkdir -p "$DEST/wheels"
  pipdl() {
    "$PYTHON" -m pip --disable-pip-version-check -q download --no-deps --only-binary=:all: \
      --python-version "$PY_TAG" --implementation cp --abi "$PY_ABI" --abi abi3 --abi none \
      --platform manylinux_2_28_x86_64 --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64 \
      --platform any -d "$DEST/wheels" "$@"
  }
  pipdl "${PURE[@]}" "${BINARY[@]}"
  # PyPI has DeepSpeed as an sdist only, whose setup.py imports torch: build a wheel here once, without
  # its C++/CUDA ops (DS_BUILD_OPS=0: they would be JIT-built at first use; the benchmark avoids them).
  "$PYTHON" -m pip --disable-pip-version-check -q download --no-deps --no-binary=:all: -d "$tmp/sdist" "$DEEPSPEED"
  DS_BUILD_OPS=0 "$PYTHON" -m pip --disable-pip-version-check -q wheel --no-deps --no-build-isolation \
    -w "$DEST/wheels" "$tmp"/sdist/deepspeed-*.tar.gz
fi
echo "gpu_bring_along.sh: $DEST ($(du -sh "$DEST" | cut -f1)):"
(cd "$DEST" && find . -maxdepth 2 | sort | sed 's/^/  /')
