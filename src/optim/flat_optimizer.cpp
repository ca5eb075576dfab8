// FlatOptimizer: state, validation, and dispatch to the fused kernels: ATen's
// own _fused_sgd_ and _fused_adamw_ over the one flat tensor for SGD and AdamW
// (torch.optim's fused=True kernels, which ran up to 1.4x faster than our loops on
// LibTorch 2.14: docs/BENCHMARKS.md, optimizer step), ours for LARS and LAMB,
// which ATen has not.
#include "paisoar/optim/flat_optimizer.h"

#include <torch/torch.h>

#include <cmath>

#include "src/optim/flat_kernels.h"
#include "src/optim/layerwise.h"

namespace paisoar::optim {

FlatOptimizer::FlatOptimizer(std::vector<torch::Tensor> params, FlatOptimizerOptions options)
    : Optimizer({torch::optim::OptimizerParamGroup(params)},
                std::make_unique<FlatOptimizerOptions>(options)),
      flat_(std::make_unique<FlatBuffer>(params)) {
  TORCH_CHECK(options.lr() >= 0, "FlatOptimizer: lr must be >= 0, got ", options.lr());
  TORCH_CHECK(options.weight_decay() >= 0, "FlatOptimizer: weight_decay must be >= 0");
  const auto& data = flat_->data();
  TORCH_CHECK(data.device().is_cpu() && (data.scalar_type() == torch::kFloat ||
                                         data.scalar_type() == torch::kDouble),
              "FlatOptimizer runs float32/float64 parameters on the CPU, got ",
              data.scalar_type(), " on ", data.device(),
              "; keep fp32 master weights for low-precision models");
  state1_ = torch::zeros_like(data);
  if (options.algorithm() == FlatAlgorithm::AdamW || options.algorithm() == FlatAlgorithm::LAMB) {
    state2_ = torch::zeros_like(data);
  }
  if (options.algorithm() == FlatAlgorithm::AdamW) adam_step_ = torch::zeros({}, data.options());
  if (options.algorithm() == FlatAlgorithm::LAMB) scratch_ = torch::empty_like(data);
  for (const auto& p : params) exempt_.push_back(detail::exempt(p, options.exclude_1d()));
}

const FlatOptimizerOptions& FlatOptimizer::options() const {
  return static_cast<const FlatOptimizerOptions&>(param_groups_[0].options());
}

void FlatOptimizer::zero_grad() { flat_->grad().zero_(); }

torch::Tensor FlatOptimizer::step(LossClosure closure) {
  torch::Tensor loss = detail::evaluate_closure(closure);
  torch::NoGradGuard no_grad;
  flat_->adopt_gradients();
  const auto& o = options();
  ++step_;
  torch::Tensor& p = flat_->data();
  const torch::Tensor& g = flat_->grad();
  switch (o.algorithm()) {
    case FlatAlgorithm::SGD: {
      const std::vector<torch::Tensor> momentum =
          o.momentum() != 0 ? std::vector<torch::Tensor>{state1_} : std::vector<torch::Tensor>{};
      at::_fused_sgd_({p}, {g}, momentum, o.weight_decay(), o.momentum(), o.lr(),
                      /*dampening=*/0.0, /*nesterov=*/false, /*maximize=*/false,
                      /*is_first_step=*/step_ == 1);
      return loss;
    }
    case FlatAlgorithm::AdamW:
      // The kernel reads the step count from a tensor; torch.optim increments it first, as here.
      adam_step_.fill_(static_cast<double>(step_));
      at::_fused_adamw_({p}, {g}, {state1_}, {state2_}, /*max_exp_avg_sqs=*/{}, {adam_step_},
                        o.lr(), std::get<0>(o.betas()), std::get<1>(o.betas()), o.weight_decay(),
                        o.eps(), /*amsgrad=*/false, /*maximize=*/false);
      return loss;
    case FlatAlgorithm::LARS:
    case FlatAlgorithm::LAMB: break;
  }
  std::vector<detail::Segment> segs;
  for (size_t i = 0; i < exempt_.size(); ++i) {
    segs.push_back({flat_->offsets()[i], flat_->numels()[i], static_cast<bool>(exempt_[i])});
  }
  const detail::FlatHyper h{o.lr(), o.weight_decay(), o.momentum(), std::get<0>(o.betas()),
                            std::get<1>(o.betas()), o.eps(), o.eta(), step_, o.bias_correction()};
  AT_DISPATCH_FLOATING_TYPES(p.scalar_type(), "FlatOptimizer::step", [&] {
    auto* pp = p.data_ptr<scalar_t>();
    const auto* gg = g.data_ptr<scalar_t>();
    auto* s1 = state1_.data_ptr<scalar_t>();
    if (o.algorithm() == FlatAlgorithm::LARS) {
      detail::lars_step(pp, gg, s1, segs, h);
    } else {
      detail::lamb_step(pp, gg, s1, state2_.data_ptr<scalar_t>(), scratch_.data_ptr<scalar_t>(),
                        segs, h);
    }
  });
  return loss;
}

}  // namespace paisoar::optim
