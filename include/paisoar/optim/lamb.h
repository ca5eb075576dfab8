// LAMB: Adam moments with a per-layer trust ratio ||w|| / ||update||, for
// large-batch training of transformers (You et al. 2019). A torch::optim optimizer.
#pragma once

#include <torch/optim/optimizer.h>
#include <torch/serialize/archive.h>

#include <tuple>
#include <vector>

namespace paisoar::optim {

struct LAMBOptions : public torch::optim::OptimizerCloneableOptions<LAMBOptions> {
  LAMBOptions(double lr = 1e-3) : lr_(lr) {}  // NOLINT: implicit like AdamOptions
  TORCH_ARG(double, lr);
  typedef std::tuple<double, double> betas_t;
  TORCH_ARG(betas_t, betas) = std::make_tuple(0.9, 0.999);
  TORCH_ARG(double, eps) = 1e-6;
  TORCH_ARG(double, weight_decay) = 0.01;
  TORCH_ARG(bool, bias_correction) = true;
  // 1-D parameters (biases, norm-layer weights) get neither weight decay nor
  // the trust ratio (plain Adam for them).
  TORCH_ARG(bool, exclude_1d) = true;

 public:
  void serialize(torch::serialize::InputArchive& archive) override;
  void serialize(torch::serialize::OutputArchive& archive) const override;
  double get_lr() const override { return lr(); }
  void set_lr(const double lr) override { this->lr(lr); }
};

struct LAMBParamState : public torch::optim::OptimizerCloneableParamState<LAMBParamState> {
  TORCH_ARG(int64_t, step) = 0;
  TORCH_ARG(torch::Tensor, exp_avg);
  TORCH_ARG(torch::Tensor, exp_avg_sq);

 public:
  void serialize(torch::serialize::InputArchive& archive) override;
  void serialize(torch::serialize::OutputArchive& archive) const override;
};

// Per parameter w with gradient g, at step t:
//   m = b1 m + (1 - b1) g ;  v = b2 v + (1 - b2) g^2
//   r = (m / (1 - b1^t)) / (sqrt(v / (1 - b2^t)) + eps) + weight_decay * w
//   trust = ||w|| / ||r||   (1 if either is 0, or for excluded 1-D parameters)
//   w -= lr * trust * r
class LAMB : public torch::optim::Optimizer {
 public:
  LAMB(std::vector<torch::optim::OptimizerParamGroup> groups, LAMBOptions defaults = {});
  LAMB(std::vector<torch::Tensor> params, LAMBOptions defaults = {});

  torch::Tensor step(LossClosure closure = nullptr) override;
  void save(torch::serialize::OutputArchive& archive) const override;
  void load(torch::serialize::InputArchive& archive) override;
};

}  // namespace paisoar::optim
