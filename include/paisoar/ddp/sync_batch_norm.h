// SyncBatchNorm: BatchNorm whose batch statistics are those of the global
// batch (all ranks of a Communicator), for data-parallel training with small
// per-rank batches. Same parameter and buffer names as torch::nn::BatchNorm,
// so state dicts carry over.
#pragma once

#include <torch/nn/module.h>
#include <torch/nn/pimpl.h>

#include <memory>

namespace paisoar::comm {
class Communicator;
}

namespace paisoar::ddp {

struct SyncBatchNormOptions {
  double eps = 1e-5;
  // Running statistics: new = (1 - momentum) * old + momentum * batch.
  double momentum = 0.1;
  bool affine = true;
  bool track_running_stats = true;
};

// Training mode: one allreduce of per-channel [sum, sum of squares, count] in
// forward and one of [sum dy, sum dy*x̂] in backward, both collective (every
// rank runs the same forward and backward). Ranks may hold different batch
// sizes, even zero. Eval mode uses the running statistics, no communication.
// Input: [N, C, *]. Statistics are computed in fp64 whatever the input dtype.
class SyncBatchNormImpl : public torch::nn::Module {
 public:
  SyncBatchNormImpl(int64_t num_features, std::shared_ptr<comm::Communicator> comm,
                    SyncBatchNormOptions options = {});
  torch::Tensor forward(const torch::Tensor& input);
  void pretty_print(std::ostream& stream) const override;

  torch::Tensor weight, bias, running_mean, running_var, num_batches_tracked;

 private:
  int64_t num_features_;
  std::shared_ptr<comm::Communicator> comm_;
  SyncBatchNormOptions options_;
};
TORCH_MODULE(SyncBatchNorm);

}  // namespace paisoar::ddp
