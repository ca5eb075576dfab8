#!/usr/bin/env bash
# The hang diagnosis end to end: the main job's CNN, 2 ranks through the
# launcher, 100 steps of 64, with --hang_timeout 0 (no flight record) and the
# default 30, alternating, ROUNDS times each; prints each run's "done:" line.
# docs/BENCHMARKS.md, "Diagnosis". Usage: bench/diagnosis_ab.sh [ROUNDS] (from a built tree)
set -euo pipefail
cd "$(dirname "$0")/.."
rounds=${1:-4}
run_dir=$(mktemp -d)
trap 'rm -rf "$run_dir"' EXIT
for _ in $(seq "$rounds"); do
  for t in 0 30; do
    rm -rf "$run_dir/run"
    line=$(build/bin/paisoar launch --nproc_per_node 2 --master_port 0 --hang_timeout "$t" -- \
      build/bin/paisoar train --set data.train_limit=6400 --set train.batch_size=64 --set train.log_every=50 \
      --set eval.every_epochs=0 --set run_dir="$run_dir/run" 2>&1 | grep "done:")
    echo "hang_timeout=$t $line"
  done
done
