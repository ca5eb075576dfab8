// LARS: SGD with momentum whose step for each layer is scaled by a trust
// ratio eta * ||w|| / (||g|| + wd * ||w||), so very large batches train stably
// (You, Gitman, Ginsburg 2017). A torch::optim optimizer.
#pragma once

#include <torch/optim/optimizer.h>
#include <torch/serialize/archive.h>

#include <vector>

namespace paisoar::optim {

struct LARSOptions : public torch::optim::OptimizerCloneableOptions<LARSOptions> {
  LARSOptions(double lr = 0.1) : lr_(lr) {}  // NOLINT: implicit like SGDOptions
  TORCH_ARG(double, lr);
  TORCH_ARG(double, momentum) = 0.9;
  TORCH_ARG(double, weight_decay) = 0;
  TORCH_ARG(double, eta) = 0.001;  // trust coefficient
  TORCH_ARG(double, eps) = 1e-9;
  // 1-D parameters (biases, norm-layer weights) get neither weight decay nor
  // the trust ratio: plain momentum SGD, as the LARS recipes do.
  TORCH_ARG(bool, exclude_1d) = true;

 public:
  void serialize(torch::serialize::InputArchive& archive) override;
  void serialize(torch::serialize::OutputArchive& archive) const override;
  double get_lr() const override { return lr(); }
  void set_lr(const double lr) override { this->lr(lr); }
};

struct LARSParamState : public torch::optim::OptimizerCloneableParamState<LARSParamState> {
  TORCH_ARG(torch::Tensor, momentum_buffer);

 public:
  void serialize(torch::serialize::InputArchive& archive) override;
  void serialize(torch::serialize::OutputArchive& archive) const override;
};

// Per parameter w with gradient g (not excluded):
//   d = g + weight_decay * w
//   trust = eta * ||w|| / (||g|| + weight_decay * ||w|| + eps)   (1 if ||w|| or ||g|| is 0)
//   v = momentum * v + lr * trust * d ;  w -= v
class LARS : public torch::optim::Optimizer {
 public:
  LARS(std::vector<torch::optim::OptimizerParamGroup> groups, LARSOptions defaults = {});
  LARS(std::vector<torch::Tensor> params, LARSOptions defaults = {});

  torch::Tensor step(LossClosure closure = nullptr) override;
  void save(torch::serialize::OutputArchive& archive) const override;
  void load(torch::serialize::InputArchive& archive) override;
};

}  // namespace paisoar::optim
