#!/usr/bin/env bash
# Configures and builds paisoar into build/ (Ninja, Release) against the venv's
# LibTorch (scripts/setup.sh makes it).
#   scripts/build.sh              everything: library, CLI, benchmarks, tests
#   scripts/build.sh --main-job   only what `paisoar train` under `paisoar launch` needs
# Other arguments go to the CMake configure step, e.g. -DCMAKE_BUILD_TYPE=RelWithDebInfo.
set -euo pipefail
cd "$(dirname "$0")/.."
targets=()
parts=(-DPAISOAR_BUILD_TESTS=ON -DPAISOAR_BUILD_BENCH=ON)
if [ "${1:-}" = "--main-job" ]; then
  shift
  parts=(-DPAISOAR_BUILD_TESTS=OFF -DPAISOAR_BUILD_BENCH=OFF)
  targets=(--target paisoar_cli paisoar_core)
fi
cmake -S . -B build -G Ninja "${parts[@]}" "$@"
cmake --build build -j "$(nproc)" "${targets[@]}"
