// Which autocast precision is fast where a run is: the `auto` rule of the
// Trainer's amp.dtype, the warning for a slow explicit choice, and the
// profiler's mixed-precision advice all ask this one place.
#pragma once

#include <c10/core/DeviceType.h>
#include <c10/core/ScalarType.h>

#include <string>

namespace paisoar::amp {

struct DtypeChoice {
  bool autocast = false;                           // false: train in fp32
  c10::ScalarType dtype = c10::ScalarType::Float;  // the autocast dtype when autocast
  std::string reason;                              // one sentence for the log
};

// The `auto` rule: bf16 autocast on a CUDA device, and on a CPU with
// AVX512-BF16 or AMX-BF16 (where oneDNN has bf16 kernels); fp32 on other CPUs,
// where LibTorch's bf16 and fp16 convolutions and matmuls fall back to kernels
// several times slower than fp32 (docs/BENCHMARKS.md, mixed precision).
DtypeChoice choose_autocast_dtype(c10::DeviceType device);

// Whether autocast to `dtype` on `device` is expected to run faster than fp32:
// CUDA: bf16 and fp16; CPU: bf16 and fp16 only with AVX512-BF16 / AMX.
bool low_precision_is_fast(c10::DeviceType device, c10::ScalarType dtype);

}  // namespace paisoar::amp
