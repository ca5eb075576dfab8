#!/usr/bin/env bash
# The main job on the embedded default setup: installs what is needed, builds,
# and runs a 2-rank distributed job through `paisoar launch` (Gloo over loopback, CPU).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
scripts/build.sh
build/bin/paisoar launch --nproc_per_node 2 --master_port 0 -- build/bin/paisoar demo
