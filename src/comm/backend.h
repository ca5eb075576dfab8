// Factories for the c10d process groups behind a Communicator. Which NCCL
// factory is linked (real or a stub that explains how to get one) is chosen by
// CMake (PAISOAR_CUDA), not by #if in the logic.
#pragma once

#include <chrono>
#include <memory>
#include <string>

#include "paisoar/comm/store.h"
#include "src/comm/c10d_types.h"

namespace gloo::transport {
class Device;
}

namespace paisoar::comm::detail {

// The Gloo transport device bound to `address`, or to the interface named by
// GLOO_SOCKET_IFNAME when that is set.
// The interface named `ifname` when not empty, else the one with `address`.
std::shared_ptr<::gloo::transport::Device> make_gloo_device(const std::string& address,
                                                            const std::string& ifname);

C10dGroupPtr make_gloo_group(const C10dStorePtr& store, int rank, int size,
                             std::chrono::milliseconds timeout,
                             const std::shared_ptr<::gloo::transport::Device>& device);

// The in-process group of Backend::Threads (backend_threads.cpp). Rank 0
// publishes the group's id in `store`; the others find it in this process.
// Throws c10::ValueError when rank 0 is in another process.
C10dGroupPtr make_thread_group(const Store& store, int rank, int size, std::chrono::milliseconds timeout);

// The /dev/shm group of Backend::Shm (backend_shm.cpp): collective over the
// ranks of `store`, which must share this host. Throws c10::Error when
// /dev/shm has no room or the segment cannot be opened.
C10dGroupPtr make_shm_group(const Store& store, int rank, int size, std::chrono::milliseconds timeout);

// Throws c10::Error in builds without CUDA, saying how to build with it.
C10dGroupPtr make_nccl_group(const C10dStorePtr& store, int rank, int size,
                             std::chrono::milliseconds timeout);

}  // namespace paisoar::comm::detail
