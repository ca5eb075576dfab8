#!/usr/bin/env bash
# The main job on the embedded default setup: installs what is needed, builds
# only what the job uses (the library, the CLI and paisoar-core: no tests, no
# benchmarks), and trains the reference CNN on Fashion-MNIST with 2 ranks
# through `paisoar launch` (Gloo over loopback, DDP, on the CPU here;
# amp.dtype auto picks bf16 where it is fast, fp32 elsewhere, and says why).
# The run is configs/fashion_mnist.yaml; extra arguments go to `paisoar train`
# (e.g. --set amp.dtype=bf16 --set train.epochs=3).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh --minimal
scripts/build.sh --main-job
build/bin/paisoar launch --nproc_per_node 2 --master_port 0 -- build/bin/paisoar train --config configs/fashion_mnist.yaml "$@"
