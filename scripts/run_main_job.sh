#!/usr/bin/env bash
# The main job on the embedded default setup: installs what is needed, builds,
# and trains the reference CNN on Fashion-MNIST with 2 ranks through
# `paisoar launch` (Gloo over loopback, CPU, DDP, bf16 autocast).
# The run is configs/fashion_mnist.yaml; extra arguments go to `paisoar train`
# (e.g. --set amp.dtype=fp32 --set train.epochs=3).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
scripts/build.sh
build/bin/paisoar launch --nproc_per_node 2 --master_port 0 -- build/bin/paisoar train --config configs/fashion_mnist.yaml "$@"
