// LinkShapes: what one end of a pipeline link remembers from the last step:
// the dtype and shape of each message on one channel. With it a receiver
// posts a payload's receive before the message's header arrives, so the bytes
// land while the stage still computes (stage_link.h). Both ends record what
// each header announced, so they agree on what is expected without asking.
#pragma once

#include <c10/util/Exception.h>
#include <torch/types.h>

#include <optional>
#include <string>
#include <vector>

namespace paisoar::pipeline::detail {

// A message's tensor without its data: enough to allocate the buffer it lands in.
struct MessageShape {
  torch::ScalarType dtype = torch::kFloat32;
  std::vector<int64_t> sizes;

  static MessageShape of(const torch::Tensor& t) {
    return MessageShape{t.scalar_type(), std::vector<int64_t>(t.sizes().begin(), t.sizes().end())};
  }
  int64_t nbytes() const {
    int64_t n = static_cast<int64_t>(c10::elementSize(dtype));
    for (int64_t s : sizes) n *= s;
    return n;
  }
  bool operator==(const MessageShape& o) const { return dtype == o.dtype && sizes == o.sizes; }
};

class LinkShapes {
 public:
  // enabled = false: nothing is expected, ever (every payload follows its header).
  explicit LinkShapes(bool enabled = false) : enabled_(enabled) {}
  // Whether this link posts ahead: only CPU tensors may travel on it then.
  bool enabled() const { return enabled_; }

  // Message `index`'s shape in the last step that carried it, when it was a
  // tensor with bytes; nullopt otherwise.
  std::optional<MessageShape> expected(int index) const {
    if (!enabled_ || index >= static_cast<int>(shapes_.size())) return std::nullopt;
    return shapes_[index];
  }
  // What message `index` of this step announced: its shape, or nullopt for an error text.
  void record(int index, std::optional<MessageShape> shape) {
    if (!enabled_) return;
    if (index >= static_cast<int>(shapes_.size())) shapes_.resize(index + 1);
    if (shape && shape->nbytes() == 0) shape.reset();  // nothing to post ahead for
    shapes_[index] = std::move(shape);
  }

 private:
  bool enabled_;
  std::vector<std::optional<MessageShape>> shapes_;
};

// One stage's memory of its links, kept by its Pipeline between steps.
struct StageLinks {
  LinkShapes activations_in, activations_out;  // from the previous stage / to the next
  LinkShapes gradients_in, gradients_out;      // from the next stage / to the previous
  // Set while a step or inference runs; still set after one that stopped
  // mid-exchange (e.g. on a communication error), when the two ends' memories
  // and the receives still posted no longer agree and the links cannot be
  // used again.
  bool exchanging = false;
};

// Called as a step or inference starts: refuses links left out of step.
inline void begin_exchange(StageLinks& links, const std::string& stage) {
  TORCH_CHECK(!links.exchanging, "pipeline: ", stage,
              " cannot run: an earlier step or infer() stopped mid-exchange (e.g. on a communication "
              "error), so this stage and its neighbours no longer agree on the messages between them; "
              "build a new Pipeline on a new group to go on");
  links.exchanging = true;
}

}  // namespace paisoar::pipeline::detail
