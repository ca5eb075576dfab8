// AmpRun: one training run of `paisoar bench amp`, the same flags for our C++
// worker and the Python peer (bench/amp_peer.py), so both run the same thing.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace paisoar::bench {

struct AmpRun {
  std::string model = "cnn";   // cnn, cnn_bn or resnet18
  std::string dtype = "fp32";  // fp32, or bf16 (CPU autocast)
  int64_t batch = 64;
  int64_t size = 28;  // image side; the CNN takes 28 only
  int64_t classes = 10;
  int threads = 1;
  int warmup = 1;        // steps run before timing
  int iters = 1;         // timed steps, at least
  double seconds = 2.0;  // timed steps continue until this much time has passed
};

// The worker flags for `run`, e.g. {"--model", "cnn", "--dtype", "bf16", ...}.
std::vector<std::string> amp_run_flags(const AmpRun& run);

// Runs `run` in this process with paisoar's models and autocast guard:
// seed 0, the model, a random batch (N(0,1) images, uniform labels), SGD
// (lr 0.01, momentum 0.9); then warmup + iters steps of zero_grad, forward and
// cross-entropy under the guard, backward and step, each timed alone: warmup
// steps, then timed ones until there are `iters` and they took `seconds`.
// Returns what the Python peer prints: {"impl", "threads", "params",
// "step_s" (timed steps only), "losses" (all steps), "rss_base_kib" (RSS once
// model, batch and optimizer exist), "peak_rss_kib" (VmHWM after the steps),
// "peak_reset" (whether VmHWM was reset to the RSS at the base; if not, the
// peak covers the whole process)}.
nlohmann::json run_amp_worker(const AmpRun& run);

}  // namespace paisoar::bench
