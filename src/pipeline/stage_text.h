// Small helpers shared by the pipeline's step and inference passes: how a
// tensor and an exception are described in error texts, and which device a
// stage's module lives on.
#pragma once

#include <c10/util/Exception.h>
#include <torch/nn/modules/container/sequential.h>
#include <torch/types.h>

#include <exception>
#include <sstream>
#include <string>

namespace paisoar::pipeline::detail {

// "[4, 16] (Float)", or "undefined".
inline std::string describe(const torch::Tensor& t) {
  if (!t.defined()) return "undefined";
  std::ostringstream out;
  out << t.sizes() << " (" << t.scalar_type() << ")";
  return out.str();
}

// The device of the stage's first parameter (or buffer); the CPU for neither.
inline torch::Device stage_device(const torch::nn::Module& module) {
  for (const auto& p : module.parameters()) return p.device();
  for (const auto& b : module.buffers()) return b.device();
  return torch::Device(torch::kCPU);
}

}  // namespace paisoar::pipeline::detail
