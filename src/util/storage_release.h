// Releasing a tensor's memory while it keeps its shape (its storage resized
// to 0 bytes, as FSDP frees a parameter between uses), and giving it memory
// again. A released tensor must not be read until it has memory again.
#pragma once

#include <ATen/ATen.h>

#include <cstddef>

namespace paisoar::detail {

inline void release_storage(const at::Tensor& t) {
  auto* s = t.storage().unsafeGetStorageImpl();
  s->set_data_ptr_noswap(at::DataPtr(nullptr, s->device()));
  s->set_nbytes(0);
}

// `nbytes` of fresh, uninitialised memory for `t`'s storage.
inline void allocate_storage(const at::Tensor& t, size_t nbytes) {
  auto* s = t.storage().unsafeGetStorageImpl();
  s->set_data_ptr_noswap(s->allocator()->allocate(nbytes));
  s->set_nbytes(nbytes);
}

// Whether `t` holds no memory now (released, or empty).
inline bool storage_released(const at::Tensor& t) { return t.storage().nbytes() == 0; }

}  // namespace paisoar::detail
