// The c10d types behind a Communicator, named once: a group is a c10d::Backend
// (ProcessGroupGloo, ProcessGroupNCCL), called directly rather than through a
// c10d::ProcessGroup wrapper. Only src/comm includes c10d headers.
#pragma once

#ifndef USE_C10D_GLOO
#error "compile src/comm with -DUSE_C10D_GLOO (TorchConfig.cmake does not set it)"
#endif

#include <torch/csrc/distributed/c10d/Backend.hpp>
#include <torch/csrc/distributed/c10d/Store.hpp>

namespace paisoar::comm::detail {

using C10dGroup = ::c10d::Backend;
using C10dGroupPtr = c10::intrusive_ptr<C10dGroup>;
using C10dWorkPtr = c10::intrusive_ptr<::c10d::Work>;
using C10dStorePtr = c10::intrusive_ptr<::c10d::Store>;

}  // namespace paisoar::comm::detail
