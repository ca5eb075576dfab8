// custom_fwd / custom_bwd: mixed precision inside your own
// torch::autograd::Function, the C++ counterparts of torch.cuda.amp's
// decorators. Construct them first thing in forward() and backward():
//
//   struct ScaledMatmul : torch::autograd::Function<ScaledMatmul> {
//     static torch::Tensor forward(torch::autograd::AutogradContext* ctx,
//                                  torch::Tensor a, torch::Tensor b) {
//       paisoar::amp::custom_fwd amp(ctx, torch::kFloat);  // this op wants fp32
//       a = amp.cast(a);
//       b = amp.cast(b);
//       ctx->save_for_backward({a, b});
//       return a.mm(b);
//     }
//     static torch::autograd::tensor_list backward(torch::autograd::AutogradContext* ctx,
//                                                  torch::autograd::tensor_list grads) {
//       paisoar::amp::custom_bwd amp(ctx);  // autocast as forward's caller had it (off here)
//       ...
//     }
//   };
#pragma once

#include <torch/csrc/autograd/custom_function.h>

#include <optional>

#include "paisoar/amp/autocast.h"

namespace paisoar::amp {

class custom_fwd {
 public:
  // Records the caller's autocast state on `device` in `ctx` for custom_bwd.
  // Without `cast_inputs` forward runs in that state. With it, and autocast on,
  // forward runs with autocast off and cast() turns floating inputs into
  // `cast_inputs`; with autocast off, nothing changes (as in PyTorch).
  explicit custom_fwd(torch::autograd::AutogradContext* ctx,
                      std::optional<c10::ScalarType> cast_inputs = std::nullopt,
                      c10::DeviceType device = c10::DeviceType::CPU);
  custom_fwd(const custom_fwd&) = delete;
  custom_fwd& operator=(const custom_fwd&) = delete;

  // `x` in the cast_inputs dtype when a cast applies and `x` is floating point.
  torch::Tensor cast(const torch::Tensor& x) const;

 private:
  std::optional<c10::ScalarType> cast_to_;
  std::optional<autocast> guard_;
};

class custom_bwd {
 public:
  // Runs backward under the autocast state custom_fwd recorded: the caller's,
  // or off when forward had cast_inputs (PyTorch's rule). The engine otherwise
  // runs backward with the state of whoever called backward(), usually off.
  // Throws c10::Error if forward did not construct a custom_fwd.
  explicit custom_bwd(torch::autograd::AutogradContext* ctx);
  custom_bwd(const custom_bwd&) = delete;
  custom_bwd& operator=(const custom_bwd&) = delete;

 private:
  std::optional<autocast> guard_;
};

}  // namespace paisoar::amp
