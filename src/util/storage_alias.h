// storage_alias: a tensor of `shape` over `flat`'s storage from element
// `offset` on. A plain alias made with set_, not an autograd view, so
// zero_grad()'s detach_() and AccumulateGrad's in-place add both keep it.
#pragma once

#include <ATen/ATen.h>

namespace paisoar::detail {

inline at::Tensor storage_alias(const at::Tensor& flat, int64_t offset, at::IntArrayRef shape) {
  return at::empty({0}, flat.options())
      .set_(flat.storage(), flat.storage_offset() + offset, shape, c10::contiguous_strides(shape));
}

// Whether `t` starts at element `offset` of `flat`.
inline bool starts_at(const at::Tensor& t, const at::Tensor& flat, int64_t offset) {
  return t.defined() &&
         t.data_ptr() == static_cast<const char*>(flat.data_ptr()) + offset * flat.element_size();
}

}  // namespace paisoar::detail
