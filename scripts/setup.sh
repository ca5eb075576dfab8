#!/usr/bin/env bash
# Installs every Debian 12 package paisoar needs to build, test and benchmark.
# Idempotent: when everything is already installed it only checks and returns.
set -euo pipefail

PACKAGES=(
  build-essential cmake ninja-build pkg-config
  libtorch-dev libgloo-dev            # LibTorch 1.13 (CPU) with c10d, and Gloo's headers
  libcli11-dev libyaml-cpp-dev nlohmann-json3-dev libspdlog-dev libfmt-dev zlib1g-dev
  libturbojpeg0-dev libjpeg62-turbo-dev libpng-dev   # image decode/encode
  googletest libgtest-dev libbenchmark-dev
  python3 python3-torch python3-torchvision  # peers for side-by-side runs, model checks and the launcher's Python tests
  dataset-fashion-mnist
  iproute2 procps
)

missing=()
for pkg in "${PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed" || missing+=("$pkg")
done
if [ ${#missing[@]} -eq 0 ]; then
  echo "setup: all ${#PACKAGES[@]} packages are installed"
  exit 0
fi

SUDO=""
if [ "$(id -u)" -ne 0 ]; then
  command -v sudo >/dev/null || { echo "setup: run as root or install sudo" >&2; exit 1; }
  SUDO="sudo"
fi
echo "setup: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -q
$SUDO apt-get install -y -q "${missing[@]}"
