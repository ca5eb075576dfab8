// The one place that knows which LibTorch version's c10d we compile against.
// 1.13: ProcessGroupGloo/NCCL derive from c10d::ProcessGroup.
// 2.x:  they derive from c10d::Backend with the same collective signatures.
#pragma once

#ifndef USE_C10D_GLOO
#error "compile src/comm with -DUSE_C10D_GLOO (TorchConfig.cmake does not set it)"
#endif

#include <torch/csrc/distributed/c10d/ProcessGroup.hpp>
#include <torch/csrc/distributed/c10d/Store.hpp>
#include <torch/version.h>

namespace paisoar::comm::detail {

#if TORCH_VERSION_MAJOR >= 2
using C10dGroup = ::c10d::Backend;
#else
using C10dGroup = ::c10d::ProcessGroup;
#endif
using C10dGroupPtr = c10::intrusive_ptr<C10dGroup>;
using C10dWorkPtr = c10::intrusive_ptr<::c10d::Work>;
using C10dStorePtr = c10::intrusive_ptr<::c10d::Store>;

}  // namespace paisoar::comm::detail
