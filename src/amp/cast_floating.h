// The input cast shared by precision pins and custom_fwd: floating tensors go
// to the pinned dtype, everything else (integers, undefined, no pin) as is.
#pragma once

#include <ATen/core/Tensor.h>

#include <optional>

namespace paisoar::amp::detail {

inline at::Tensor cast_floating(const at::Tensor& x, std::optional<c10::ScalarType> to) {
  if (!to || !x.defined() || !x.is_floating_point() || x.scalar_type() == *to) return x;
  return x.to(*to);
}

}  // namespace paisoar::amp::detail
