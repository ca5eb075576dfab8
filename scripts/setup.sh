#!/usr/bin/env bash
# Installs what paisoar needs to build, test and benchmark: Debian 12 packages
# through apt, and the project's own Python virtual environment (.venv, or
# $PAISOAR_VENV) with the pinned PyTorch whose LibTorch we build against.
# Idempotent: when everything is there it only checks and returns.
#   scripts/setup.sh            everything (build, tests, benchmarks, peers)
#   scripts/setup.sh --minimal  only what the main job needs to build and run
set -euo pipefail
cd "$(dirname "$0")/.."

minimal=0
[ "${1:-}" = "--minimal" ] && minimal=1

# The PyTorch we build against and compare with. torch's CUDA wheel runs on the
# CPU too; its LibTorch has NCCL and the CUDA kernels, so the CUDA variant of
# paisoar compiles on machines without a GPU. Keep in step with
# cmake/torch_version.cmake (the supported range).
TORCH_PIN="torch==2.14.1"
TORCHVISION_PIN="torchvision==0.29.1"
# mypy: tests/python/test_typing.py; expecttest: torch.testing._internal imports it
# (torch's own DDP tests, tests/python/torch_ddp_suite)
# spdl: benchmark only, `paisoar bench data`'s SPDL peer (bench/data_spdl_peer.py); the library
# never imports it
PY_PACKAGES=(numpy safetensors pytest tensorboard setuptools mypy expecttest spdl)

PACKAGES=(
  build-essential cmake ninja-build pkg-config
  libgloo-dev   # headers only: c10d's ProcessGroupGloo.hpp includes Gloo's, which the torch wheel
                # does not ship; nothing links Debian's libgloo (libtorch carries its own Gloo)
  libcli11-dev libyaml-cpp-dev nlohmann-json3-dev zlib1g-dev
  libjpeg62-turbo-dev libpng-dev   # image decode/encode (libjpeg-turbo through the libjpeg API)
  python3 python3-venv python3-dev   # python3-dev: Python.h for `pip install .` (paisoar._C)
  dataset-fashion-mnist
  iproute2 procps
)
if [ "$minimal" -eq 0 ]; then
  PACKAGES+=(googletest libgtest-dev libbenchmark-dev
             openmpi-bin libopenmpi-dev  # `paisoar bench comm --peer mpi` only: the library never links MPI
             libavutil57 libavcodec59 libavformat59 libavdevice59 libavfilter8 libswscale6  # FFmpeg 5 for the
                                                  # SPDL peer of `paisoar bench data` only (spdl's wheel loads it)
             chromium)  # the report tests open `paisoar report`'s page in headless Chromium
fi

missing=()
for pkg in "${PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed" || missing+=("$pkg")
done
if [ ${#missing[@]} -eq 0 ]; then
  echo "setup: all ${#PACKAGES[@]} Debian packages are installed"
else
  SUDO=""
  if [ "$(id -u)" -ne 0 ]; then
    command -v sudo >/dev/null || { echo "setup: run as root or install sudo" >&2; exit 1; }
    SUDO="sudo"
  fi
  echo "setup: installing ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  $SUDO apt-get update -q
  $SUDO apt-get install -y -q "${missing[@]}"
fi

# The virtual environment. Python 3.11: the torch wheels on these machines are
# built for it. PAISOAR_PYTHON_FOR_VENV picks another interpreter.
venv=${PAISOAR_VENV:-$PWD/.venv}
want_torch=${TORCH_PIN#torch==}
want_vision=${TORCHVISION_PIN#torchvision==}
check='import importlib.metadata as m, sys
want = dict(a.split("=", 1) for a in sys.argv[1:])
have = {}
for name in want:
    try: have[name] = m.version(name)
    except m.PackageNotFoundError: have[name] = "missing"
bad = [f"{n} {have[n]} (want {v})" for n, v in want.items() if v != "*" and have[n] != v]
bad += [f"{n} missing" for n, v in want.items() if v == "*" and have[n] == "missing"]
print("; ".join(bad)); sys.exit(1 if bad else 0)'
wanted=("torch=$want_torch")
[ "$minimal" -eq 0 ] && wanted+=("torchvision=$want_vision")
for p in "${PY_PACKAGES[@]}"; do [ "$minimal" -eq 0 ] && wanted+=("$p=*"); done
if [ -x "$venv/bin/python" ] && "$venv/bin/python" -c "$check" "${wanted[@]}" >/dev/null 2>&1; then
  echo "setup: $venv has ${TORCH_PIN}$([ "$minimal" -eq 0 ] && echo " and the test packages")"
  exit 0
fi
if [ ! -x "$venv/bin/python" ]; then
  py=${PAISOAR_PYTHON_FOR_VENV:-python3}
  echo "setup: creating the virtual environment $venv with $($py --version 2>&1)"
  "$py" -m venv "$venv"
fi
to_install=("$TORCH_PIN")
[ "$minimal" -eq 0 ] && to_install+=("$TORCHVISION_PIN" "${PY_PACKAGES[@]}")
echo "setup: pip install ${to_install[*]} into $venv"
"$venv/bin/python" -m pip install -q --disable-pip-version-check "${to_install[@]}"
if ! why=$("$venv/bin/python" -c "$check" "${wanted[@]}"); then
  echo "setup: $venv still lacks: $why" >&2
  exit 1
fi
echo "setup: $venv has ${TORCH_PIN}$([ "$minimal" -eq 0 ] && echo " and the test packages")"
