#!/usr/bin/env bash
# Installs every Debian 12 package dsrun needs to build, test and benchmark, then the PyPI environment with
# torch 2.x and DeepSpeed that libdsrt is also built and tested against (scripts/setup_torch2_env.sh).
# Idempotent; run as root. Usage: scripts/install_deps.sh
set -euo pipefail

packages=(
  # toolchain
  build-essential cmake ninja-build pkg-config clang libclang-rt-14-dev
  # launcher / agent / proto
  libboost-program-options-dev libboost-system-dev nlohmann-json3-dev libyaml-cpp-dev
  libprotobuf-dev protobuf-compiler libssh-dev libssl-dev openssl
  # tests
  catch2 procps psmisc util-linux iproute2
  # packaging: man pages from --help, Debian packages (CPack uses dpkg-shlibdeps and file), their checks
  help2man dpkg-dev file lintian man-db systemd
  # runtime: LibTorch 1.13 (CPU, c10d + Gloo) and a real BLAS (the reference BLAS is ~30x slower)
  libtorch-dev libgloo-dev libopenblas0-pthread
  # the dsrt Python package (pybind11 extension on libdsrt; torch 1.13 shares libtorch.so.1.13 with
  # libtorch-dev) and its pytest suites; python3-torch is also the peer of bench/ (torchrun, PyTorch DDP)
  python3-torch python3-dev pybind11-dev python3-pytest python3-numpy
  # the virtual environment with torch 2.x from PyPI (scripts/setup_torch2_env.sh)
  python3-venv
  # the main job's text corpus (examples/train_gpt.py reads /usr/share/games/fortunes) and its loss curve
  fortunes python3-matplotlib
  # multi-node backends and the test cluster
  openssh-server openssh-client pdsh openmpi-bin mpich slurm-wlm slurmctld slurmd slurm-client munge
)

if [ "$(id -u)" -ne 0 ]; then
  echo "install_deps.sh: must run as root (it calls apt-get)" >&2
  exit 1
fi

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
  echo "install_deps.sh: all ${#packages[@]} packages already installed"
else
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -q
  apt-get install -y -q --no-install-recommends "${missing[@]}"
fi

"$(dirname "$0")/setup_torch2_env.sh"
