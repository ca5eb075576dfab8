// FlatOptimizer: SGD with momentum, AdamW, LARS or LAMB as one fused kernel
// over flat parameter/gradient buffers (ATen's _fused_sgd_/_fused_adamw_ for
// SGD and AdamW; ours for LARS/LAMB, two passes: norms, then the update), with the numbers of the per-tensor optimizers
// (torch::optim::SGD/AdamW, paisoar::optim::LARS/LAMB) to float rounding.
#pragma once

#include <torch/optim/optimizer.h>

#include <memory>
#include <tuple>
#include <vector>

#include "paisoar/optim/flat_buffer.h"

namespace paisoar::optim {

enum class FlatAlgorithm { SGD, AdamW, LARS, LAMB };

struct FlatOptimizerOptions
    : public torch::optim::OptimizerCloneableOptions<FlatOptimizerOptions> {
  FlatOptimizerOptions(FlatAlgorithm algorithm = FlatAlgorithm::SGD, double lr = 0.1)
      : algorithm_(algorithm), lr_(lr) {}
  TORCH_ARG(FlatAlgorithm, algorithm);
  TORCH_ARG(double, lr);
  TORCH_ARG(double, weight_decay) = 0;
  TORCH_ARG(double, momentum) = 0.9;  // SGD, LARS
  typedef std::tuple<double, double> betas_t;
  TORCH_ARG(betas_t, betas) = std::make_tuple(0.9, 0.999);  // AdamW, LAMB
  TORCH_ARG(double, eps) = 1e-8;      // AdamW 1e-8; set 1e-6 to match LAMBOptions, 1e-9 for LARS
  TORCH_ARG(double, eta) = 0.001;     // LARS trust coefficient
  TORCH_ARG(bool, exclude_1d) = true; // LARS, LAMB: 1-D params get no decay, no trust ratio
  TORCH_ARG(bool, bias_correction) = true;  // LAMB

 public:
  double get_lr() const override { return lr(); }
  void set_lr(const double lr) override { this->lr(lr); }
};

// One parameter group over all `params`: one dtype, float32 or float64 (keep
// fp32 master weights for bf16/fp16 models), on the CPU. Use it like any
// torch::optim optimizer, GradScaler included; set_lr on its group works with
// LR schedules. zero_grad() zeroes the flat gradient in one kernel.
class FlatOptimizer : public torch::optim::Optimizer {
 public:
  FlatOptimizer(std::vector<torch::Tensor> params, FlatOptimizerOptions options);

  torch::Tensor step(LossClosure closure = nullptr) override;
  void zero_grad();
  FlatBuffer& buffer() { return *flat_; }
  int64_t steps() const { return step_; }

 private:
  const FlatOptimizerOptions& options() const;
  std::unique_ptr<FlatBuffer> flat_;
  torch::Tensor state1_, state2_;  // momentum / exp_avg, exp_avg_sq
  torch::Tensor adam_step_;        // AdamW: the step count _fused_adamw_ reads
  torch::Tensor scratch_;          // LAMB's update before the trust ratio
  std::vector<bool> exempt_;       // per parameter: no weight decay, no trust ratio
  int64_t step_ = 0;
};

}  // namespace paisoar::optim
