// ZeroMemoryRun: one configuration of the ZeRO section of `paisoar bench
// memory` (bench/zero_memory_bench.cpp), and the flags that hand it to the
// rank processes (`paisoar bench zero-memory-worker`, bench/zero_memory_worker.cpp).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace paisoar::bench {

struct ZeroMemoryRun {
  std::string mode = "ddp";  // ddp (plain DistributedDataParallel), zero1, zero2 or zero3
  // The GPT stack (bench/gpt_stack.h): 8 blocks of width 768 (12 heads) and a
  // 32,000-token vocabulary with an untied head: 105.9M parameters.
  int64_t vocab = 32000, layers = 8, embd = 768, heads = 12;
  int64_t batch = 2, seq = 64;  // per rank
  int warmup = 1, steps = 3;    // untimed, then timed AdamW steps
  int threads = 1;              // intra-op threads per rank
};

// {"--mode", "zero2", "--vocab", "32000", ...}
inline std::vector<std::string> zero_memory_run_flags(const ZeroMemoryRun& r) {
  return {"--mode",   r.mode,   "--vocab",  std::to_string(r.vocab),  "--layers",  std::to_string(r.layers),
          "--embd",   std::to_string(r.embd),   "--heads",  std::to_string(r.heads),
          "--batch",  std::to_string(r.batch),  "--seq",    std::to_string(r.seq),
          "--warmup", std::to_string(r.warmup), "--steps",  std::to_string(r.steps),
          "--threads", std::to_string(r.threads)};
}

}  // namespace paisoar::bench
