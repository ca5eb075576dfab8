// StageLink: the point-to-point messages between neighbouring pipeline stages.
// Each message is a small header (dtype and shape, or "failed" and the
// length of an error text) followed by the tensor's bytes or the text, so a
// receiver allocates exactly what comes, checks it, and a stage that failed
// still answers every message its neighbours wait for: errors travel along
// the pipeline instead of leaving peers blocked in recv.
#pragma once

#include <torch/types.h>

#include <memory>
#include <string>
#include <vector>

#include "paisoar/comm/communicator.h"

namespace paisoar::pipeline::detail {

enum class Channel { Activation = 0, Gradient = 2 };  // the header's tag; the payload's is +1

// A tensor from a neighbour, or the error text that stopped its step.
struct Message {
  bool failed = false;
  torch::Tensor tensor;  // when !failed
  std::string error;     // when failed
};

// Owned by one Pipeline and used from the thread that runs its steps.
class StageLink {
 public:
  explicit StageLink(std::shared_ptr<comm::Communicator> group) : group_(std::move(group)) {}

  // Asynchronous; `tensor` is kept alive until wait_sends(). At most 8 dims.
  void send_tensor(const torch::Tensor& tensor, int peer, Channel channel);
  void send_error(const std::string& text, int peer, Channel channel);
  // Blocks until the header and the payload arrived. The tensor is received on `device`.
  Message recv(int peer, Channel channel, const torch::Device& device);
  // Waits for every send since the last call (throws comm::CommError on failure).
  void wait_sends();

 private:
  void post(const torch::Tensor& tensor, int peer, int tag);

  std::shared_ptr<comm::Communicator> group_;
  std::vector<comm::Work> sends_;
  std::vector<torch::Tensor> keep_alive_;
};

}  // namespace paisoar::pipeline::detail
