// CommHook: how one bucket of gradients is averaged across ranks. The built-in
// hooks (plain, fp16/bf16, int8, PowerSGD) implement it; a user hook can too,
// like torch's DDP register_comm_hook.
#pragma once

#include <torch/types.h>

#include <memory>
#include <vector>

#include "paisoar/ddp/options.h"

namespace paisoar::comm {
class Communicator;
}

namespace paisoar::ddp {

// Where each gradient of a bucket sits in its flat buffer.
struct BucketLayout {
  std::vector<int64_t> offsets;               // element offset of each gradient
  std::vector<std::vector<int64_t>> shapes;   // its shape
  std::vector<torch::Tensor> parameters;      // whose gradients they are
  size_t bucket_count = 0;                    // buckets in the reducer (this one is the last when index + 1)
};

// Contract: the reducer calls launch() for buckets 0, 1, ... in the same order
// on every rank (possibly during backward), then finish() for every launched
// bucket in the same order, after backward. `flat` holds this rank's gradients
// at launch and must hold their average over ranks when finish() returns; it is
// not modified between the two calls. Called from one thread at a time.
class CommHook {
 public:
  virtual ~CommHook() = default;
  virtual void launch(size_t bucket, const torch::Tensor& flat, const BucketLayout& layout) = 0;
  virtual void finish(size_t bucket, const torch::Tensor& flat, const BucketLayout& layout) = 0;
  // The buckets were rebuilt: per-bucket state (buffers, error feedback) starts over.
  virtual void reset() {}
  // true: finish() leaves the average over all ranks (the reducer may rescale
  // it, e.g. by the ranks that have not joined). false: the hook decides what
  // `flat` holds (a user's hook, as torch's register_comm_hook: no division).
  virtual bool averages() const { return true; }
  // Bytes of tensors this rank handed to collectives since the last call.
  int64_t take_bytes() {
    int64_t b = bytes_;
    bytes_ = 0;
    return b;
  }

 protected:
  void count_bytes(const torch::Tensor& t) { bytes_ += t.numel() * t.element_size(); }

 private:
  int64_t bytes_ = 0;
};

// The hook DdpOptions ask for: its compression, or the hierarchical allreduce
// when ranks span nodes (see DdpOptions::hierarchical). Collective when
// hierarchical (it forms the node and cross-node groups).
std::unique_ptr<CommHook> make_comm_hook(const DdpOptions& options,
                                         std::shared_ptr<comm::Communicator> comm);
std::unique_ptr<CommHook> make_comm_hook(const CompressionOptions& options,
                                         std::shared_ptr<comm::Communicator> comm);

}  // namespace paisoar::ddp
