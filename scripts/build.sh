#!/usr/bin/env bash
# Configures and builds paisoar into build/ (Ninja, RelWithDebInfo).
# Extra arguments go to the CMake configure step, e.g. -DPAISOAR_BUILD_BENCH=OFF.
set -euo pipefail
cd "$(dirname "$0")/.."
cmake -S . -B build -G Ninja "$@"
cmake --build build -j "$(nproc)"
