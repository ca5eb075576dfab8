// Gloo process groups: CPU collectives over TCP, always built.
#include <torch/csrc/distributed/c10d/ProcessGroupGloo.hpp>

#include "src/comm/backend.h"

namespace paisoar::comm::detail {

std::shared_ptr<::gloo::transport::Device> make_gloo_device(const std::string& address,
                                                            const std::string& ifname) {
  if (!ifname.empty()) return ::c10d::ProcessGroupGloo::createDeviceForInterface(ifname);
  return ::c10d::ProcessGroupGloo::createDeviceForHostname(address);
}

C10dGroupPtr make_gloo_group(const C10dStorePtr& store, int rank, int size,
                             std::chrono::milliseconds timeout,
                             const std::shared_ptr<::gloo::transport::Device>& device) {
  auto options = ::c10d::ProcessGroupGloo::Options::create(timeout);
  options->devices.push_back(device);
  // Two threads let two collectives (e.g. consecutive gradient buckets) progress at once.
  options->threads = 2;
  return c10::make_intrusive<::c10d::ProcessGroupGloo>(store, rank, size, options);
}

}  // namespace paisoar::comm::detail
