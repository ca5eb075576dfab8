// RawGlooPeer: a plain c10d ProcessGroupGloo beside a Communicator (same store,
// same transport device), driven the way a user of raw c10d would. Benchmarks
// measure paisoar against it; it keeps c10d out of bench/.
#pragma once

#include <ATen/ATen.h>

#include <memory>
#include <vector>

#include "paisoar/comm/communicator.h"

namespace paisoar::comm {

class RawGlooPeer {
 public:
  // Collective over `comm`: every rank constructs one.
  explicit RawGlooPeer(Communicator& comm);
  ~RawGlooPeer();

  // Blocking c10d Gloo allreduce (sum) of `tensor`, in place.
  void allreduce(at::Tensor tensor);
  // Blocking c10d Gloo allgather into one tensor per rank.
  void allgather(std::vector<at::Tensor> outputs, at::Tensor input);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace paisoar::comm
