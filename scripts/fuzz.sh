#!/usr/bin/env bash
# Fuzzes the readers of untrusted input (config, IDX, image decode, record
# shard index and manifest, safetensors, metrics.jsonl and the report drawn
# from it) with libFuzzer: installs Debian's clang, builds the targets of
# tests/fuzz/targets in build-fuzz/ (ASan + UBSan), and runs each for a bounded
# time from its seed corpus, tests/fuzz/corpus/<reader>/, with the words of
# tests/fuzz/dict/<reader>.dict where there is one. Fails on a crash, a
# sanitizer report, an unclear error (tests/fuzz/targets/fuzz_support.h), a
# hang (-timeout) or a memory blow-up (-rss_limit_mb, -malloc_limit_mb),
# printing the finding and the file its input was saved to; each finding
# becomes a test in tests/fuzz/test_fuzz_findings.cpp (tests/fuzz/README.md).
#   scripts/fuzz.sh                  every target, 60 s each, nproc at a time
#   scripts/fuzz.sh -t 600 image     one target for 10 minutes
#   scripts/fuzz.sh -s 0 -t 600      ... from a random seed (new ground)
# The mutations come from a fixed seed (1) unless -s says otherwise, so a run
# from the committed seeds repeats. Without -t (CI) each target also stops
# after the executions tests/fuzz/verified_runs lists: a prefix of the
# sequence a longer local run with the same seed went through without a
# finding. -s 0 lets libFuzzer pick a seed (printed in each log as "Seed: N");
# -t runs uncapped for that long.
# Inputs that reached new code stay in build-fuzz/corpus/<reader>/ and seed
# the next local run.
set -euo pipefail
cd "$(dirname "$0")/.."

seconds=60
seed=1
capped=1
while getopts "t:s:" opt; do
  case $opt in
    t) seconds=$OPTARG; capped=0 ;;
    s) seed=$OPTARG ;;
    *) echo "usage: scripts/fuzz.sh [-t SECONDS_PER_TARGET] [-s SEED (0: random)] [READER...]" >&2; exit 2 ;;
  esac
done
shift $((OPTIND - 1))
all=(config idx image shard_index shard_manifest safetensors metrics report)
readers=("${all[@]}")
[ $# -gt 0 ] && readers=("$@")
for r in "${readers[@]}"; do
  [[ " ${all[*]} " == *" $r "* ]] || { echo "fuzz: no target '$r'; the targets are: ${all[*]}" >&2; exit 2; }
done
jobs=${PAISOAR_FUZZ_JOBS:-$(nproc)}
start=$SECONDS

# What the build needs (the venv's LibTorch, yaml-cpp, libjpeg, ...), then clang.
scripts/setup.sh --minimal
CLANG=(clang-14 libclang-rt-14-dev)  # Debian 12's clang; libclang-rt has libFuzzer and the sanitizers
missing=()
for pkg in "${CLANG[@]}"; do
  dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed" || missing+=("$pkg")
done
if [ ${#missing[@]} -gt 0 ]; then
  SUDO=""
  [ "$(id -u)" -ne 0 ] && SUDO="sudo"
  echo "fuzz: installing ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  $SUDO apt-get update -q
  $SUDO apt-get install -y -q "${missing[@]}"
fi

build=build-fuzz
if [ ! -f "$build/CMakeCache.txt" ]; then
  CC=clang-14 CXX=clang++-14 cmake -S . -B "$build" -G Ninja -DPAISOAR_FUZZERS=ON
fi
cmake --build "$build" -j "$(nproc)" --target "${readers[@]/#/fuzz_}"
built=$SECONDS

# One target: its log and libFuzzer's exit status in build-fuzz/logs/. The
# report target reads what the metrics target does, from the same seeds.
run_target() {
  local r=$1 status=0 seeds=tests/fuzz/corpus/${1/#report/metrics} dict=tests/fuzz/dict/${1/#report/metrics}.dict
  local extra=()
  [ -f "$dict" ] && extra=(-dict="$dict")
  if [ "$capped" = 1 ] && [ "$seed" = 1 ]; then
    local runs
    runs=$(awk -v t="$r" '$1 == t { print $2 }' tests/fuzz/verified_runs)
    [ -n "$runs" ] && extra+=(-runs="$runs")
  fi
  mkdir -p "$build/corpus/$r" "$build/findings/$r" "$build/logs"
  rm -f "$build/findings/$r"/*
  "$build/bin/fuzz_$r" -seed="$seed" -max_total_time="$seconds" -timeout=15 -rss_limit_mb=2048 -malloc_limit_mb=2048 \
    -print_final_stats=1 -artifact_prefix="$build/findings/$r/" "${extra[@]}" \
    "$build/corpus/$r" "$seeds" >"$build/logs/$r.log" 2>&1 || status=$?
  echo "$status" >"$build/logs/$r.status"
}

echo "fuzz: ${readers[*]}: ${seconds} s each$([ "$capped" = 1 ] && [ "$seed" = 1 ] && echo " (at most tests/fuzz/verified_runs' executions)"), $jobs at a time, seed $seed"
for r in "${readers[@]}"; do
  while [ "$(jobs -rp | wc -l)" -ge "$jobs" ]; do wait -n || true; done
  run_target "$r" &
done
wait

failed=()
printf '%-15s %10s %8s %9s %s\n' target executions edges features result
for r in "${readers[@]}"; do
  status=$(cat "$build/logs/$r.status")
  log="$build/logs/$r.log"
  execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log")
  cov=$(grep -o 'cov: [0-9]* ft: [0-9]*' "$log" | tail -1 || true)  # none when it failed on a seed
  edges=$(echo "$cov" | awk '{print $2}')
  features=$(echo "$cov" | awk '{print $4}')
  result=ok
  if [ "$status" -ne 0 ]; then
    result="FAILED (status $status)"
    failed+=("$r")
  fi
  printf '%-15s %10s %8s %9s %s\n' "$r" "${execs:-?}" "${edges:-?}" "${features:-?}" "$result"
done
echo "fuzz: built in $((built - start)) s, fuzzed in $((SECONDS - built)) s"

for r in "${failed[@]}"; do
  log="$build/logs/$r.log"
  echo
  echo "==== fuzz_$r: what it found (whole log: $log)"
  awk '/paisoar fuzz finding|==[0-9]+==ERROR|runtime error|ERROR: libFuzzer/ { shown = 1 } shown' "$log" | head -40
  for f in "$build/findings/$r"/*; do
    [ -e "$f" ] && echo "input: $f (replay: $build/bin/fuzz_$r $f)"
  done
done
if [ ${#failed[@]} -gt 0 ]; then
  echo "fuzz: FAILED: ${failed[*]}; turn each input into a test in tests/fuzz/test_fuzz_findings.cpp" >&2
  exit 1
fi
echo "fuzz: no crash, hang, sanitizer report or unclear error"
