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

  // Blocking c10d Gloo allreduce of `tensor`, in place, in its own dtype
  // (bf16 included) and with Gloo's own AVG when `average`.
  void allreduce(at::Tensor tensor, bool average = false);
  // Blocking c10d Gloo allgather into one tensor per rank.
  void allgather(std::vector<at::Tensor> outputs, at::Tensor input);
  // Blocking c10d Gloo allgather into one flat tensor (_allgather_base).
  void allgather_into(at::Tensor output, at::Tensor input);
  // Blocking c10d Gloo reduce-scatter (sum) of `input` into `output`
  // (_reduce_scatter_base: an allreduce and a copy of this rank's chunk in 2.x).
  void reduce_scatter(at::Tensor output, at::Tensor input);
  // Blocking c10d Gloo broadcast of `tensor` from `root`, in place.
  void broadcast(at::Tensor tensor, int root);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace paisoar::comm
