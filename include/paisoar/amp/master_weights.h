// amp::MasterWeights: "O2" mixed precision. The model's parameters are bf16 or
// fp16 (activations and weights both shrink); the optimizer updates fp32
// master copies, so updates smaller than a low-precision ulp are not lost.
#pragma once

#include <torch/types.h>

#include <vector>

namespace paisoar::amp {

// Per step:
//   scaler.scale(loss).backward();      // gradients land in the model's bf16 params
//   master.copy_grads_to_master();      // fp32 master .grad = model .grad
//   scaler.step(optimizer);             // optimizer built on master.params()
//   scaler.update();
//   master.copy_master_to_model();      // model params = master, rounded once
// The master copies are leaves owned by this object; give master.params() to
// the optimizer. Floating parameters already in fp32 are shared, not copied.
// Not thread-safe.
class MasterWeights {
 public:
  // Throws c10::ValueError for a non-floating parameter.
  explicit MasterWeights(std::vector<torch::Tensor> model_params);

  std::vector<torch::Tensor>& params() { return master_; }
  // master.grad = model.grad in fp32 (model gradients left undefined stay undefined).
  void copy_grads_to_master();
  // model = master, rounded to each model parameter's dtype.
  void copy_master_to_model();

 private:
  std::vector<torch::Tensor> model_;
  std::vector<torch::Tensor> master_;
};

}  // namespace paisoar::amp
