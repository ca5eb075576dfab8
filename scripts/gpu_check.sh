#!/usr/bin/env bash
# The CUDA check, for a machine with one GPU, a CUDA PyTorch (2.11 or newer) in
# python3, nvcc, cmake and ninja, but no apt and no network. It builds the
# CUDA variant against that PyTorch with the Debian files scripts/gpu_bundle.sh
# prepared (build-gpu-deps/, carried with the working tree), runs the GPU
# tests, then the GPU benchmarks: a ResNet-50 training step in fp32, TF32, bf16,
# fp16 with the scaler and channels_last against PyTorch eager (and DDP on one
# rank, and torch.compile), and the JPEG loader feeding the GPU against
# torchvision's DataLoader. Results go as JSON files into $OUT (or
# gpu_check_out/). Meant to finish within 8 minutes on 16 cores.
#   PAISOAR_GPU_CHECK_REHEARSAL=1 scripts/gpu_check.sh   the same run on a CPU, small
set -euo pipefail
cd "$(dirname "$0")/.."
start=$(date +%s)
out=${OUT:-$PWD/gpu_check_out}
mkdir -p "$out"
log() { echo "gpu_check [$(( $(date +%s) - start ))s]: $*" | tee -a "$out/gpu_check.log"; }
deps=$PWD/build-gpu-deps/root
[ -d "$deps" ] || { echo "gpu_check: $deps is missing: run scripts/gpu_bundle.sh on a Debian 12 machine and carry build-gpu-deps" >&2; exit 1; }
python=${PAISOAR_PYTHON:-python3}
rehearsal=${PAISOAR_GPU_CHECK_REHEARSAL:-0}
device=cuda
[ "$rehearsal" = 1 ] && device=cpu
"$python" -c 'import torch, sys; print("torch", torch.__version__, "cuda", torch.version.cuda, "gpus", torch.cuda.device_count())' | tee -a "$out/gpu_check.log"
if [ "$rehearsal" != 1 ]; then
  "$python" -c 'import torch, sys; sys.exit(0 if torch.cuda.is_available() else 1)' ||
    { echo "gpu_check: $python's torch sees no GPU" >&2; exit 1; }
fi
lib=$deps/usr/lib/x86_64-linux-gnu
export CMAKE_PREFIX_PATH="$deps/usr:$lib/cmake:$deps/usr/share/cmake${CMAKE_PREFIX_PATH:+:$CMAKE_PREFIX_PATH}"
jobs=$(nproc)
log "configuring against $("$python" -c 'import torch; print(torch.__version__)') with the bundle in $deps"
cmake -S . -B build-gpu -G Ninja -DPAISOAR_PYTHON="$(command -v "$python")" -DPAISOAR_BUILD_TESTS=ON \
  -DCMAKE_INCLUDE_PATH="$deps/usr/include" -DCMAKE_LIBRARY_PATH="$lib" \
  -DCMAKE_CXX_FLAGS="-isystem $deps/usr/include -isystem $deps/usr/include/x86_64-linux-gnu" \
  > "$out/configure.log" 2>&1 || { tail -40 "$out/configure.log"; exit 1; }
grep -E "paisoar: LibTorch|CUDA variant" "$out/configure.log" | tee -a "$out/gpu_check.log" || true
log "building (-j$jobs)"
cmake --build build-gpu -j "$jobs" --target paisoar_cli paisoar_core cuda_tests > "$out/build.log" 2>&1 ||
  { grep -m20 -B2 -A6 "error" "$out/build.log"; exit 1; }
status=0
log "GPU tests"
LD_LIBRARY_PATH="$lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" timeout 120 build-gpu/bin/cuda_tests \
  --gtest_output="json:$out/cuda_tests.json" 2>&1 | tee "$out/cuda_tests.log" | grep -E "^\[ *(OK|FAILED|SKIPPED|PASSED) " || status=1
grep -q "FAILED" "$out/cuda_tests.log" && status=1
export LD_LIBRARY_PATH="$lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
paisoar=build-gpu/bin/paisoar
if [ "$rehearsal" = 1 ]; then
  step=(--batch 2 --size 64 --warmup 1 --iters 1); data=(--images 200 --workers 2 --repeats 1)
else
  step=(--batch 64 --size 224 --warmup 5 --iters 20); data=(--images 2000 --workers 4,8 --repeats 2)
fi
log "ResNet-50 training step against PyTorch eager"
timeout 240 "$paisoar" bench gpu --device "$device" "${step[@]}" --no-compile --json "$out/gpu_step.json" \
  2>&1 | tee "$out/gpu_step.log" || status=1
log "JPEG loader feeding the $device against torchvision's DataLoader"
timeout 150 "$paisoar" bench data --device "$device" "${data[@]}" --dir "$PWD/build-gpu/bench_data" \
  --json "$out/data_gpu.json" 2>&1 | tee "$out/data_gpu.log" || status=1
left=$(( 480 - ($(date +%s) - start) ))
if [ "$left" -gt 120 ]; then
  log "bf16 step against torch.compile ($left s left)"
  timeout $(( left - 20 )) "$paisoar" bench gpu --device "$device" "${step[@]}" --variants bf16 \
    --json "$out/gpu_step_compile.json" 2>&1 | tee "$out/gpu_step_compile.log" || status=1
else
  log "skipped the torch.compile row: $left s left of 8 minutes"
fi
log "done (status $status); results in $out"
exit $status
