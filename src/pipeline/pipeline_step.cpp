// Pipeline::step: runs this stage's op list over M micro-batches. A failure
// (a layer's exception, a bad shape, too few rows) does not stop the list:
// the stage goes on answering its neighbours with the error instead of
// tensors, so every rank reaches the end of the step, where one allgather
// (step_outcome.h) tells all of them whether to return the loss or throw.
#include <torch/torch.h>

#include <chrono>
#include <optional>
#include <sstream>

#include "paisoar/pipeline/pipeline.h"
#include "paisoar/error.h"
#include "src/pipeline/link_shapes.h"
#include "src/pipeline/stage_link.h"
#include "src/pipeline/stage_text.h"
#include "src/pipeline/step_outcome.h"

namespace paisoar::pipeline {
namespace {

using Clock = std::chrono::steady_clock;
using detail::Channel;
using detail::describe;
using detail::stage_device;

double seconds_since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

// Splits `batch` into `parts` chunks along dim 0; returns an error text or "".
std::string split_batch(const torch::Tensor& batch, int parts, const char* what,
                        std::vector<torch::Tensor>* out) {
  std::ostringstream why;
  if (!batch.defined()) {
    why << "the " << what << " is undefined; pass the batch's " << what << " to step() on this stage";
  } else if (batch.dim() == 0 || batch.size(0) < parts) {
    why << "the " << what << " " << describe(batch) << " has "
        << (batch.dim() == 0 ? 0 : batch.size(0)) << " rows (dim 0), fewer than micro_batches = " << parts
        << "; use a batch of at least " << parts << " rows or fewer micro-batches";
  } else {
    *out = torch::tensor_split(batch, parts, 0);
  }
  return why.str();
}

}  // namespace

// One step on this stage: the micro-batches, what each holds between its
// forward and backward, the messages, and the first error. Lives inside step().
class Pipeline::StepRun {
 public:
  StepRun(Pipeline& pipe, const torch::Tensor& input, const torch::Tensor& target)
      : p_(pipe), m_(pipe.options_.micro_batches), links_(*pipe.links_),
        outbox_(pipe.group_, &links_.activations_out, &links_.gradients_out), saved_in_(m_), saved_out_(m_) {
    const torch::Device device = stage_device(*p_.module_);
    // The first receives are posted now, the rest as the step goes (see stage_link.h).
    if (!p_.is_first()) {
      from_prev_.emplace(p_.group_, p_.stage_ - 1, Channel::Activation, m_, device, &links_.activations_in);
    }
    if (!p_.is_last()) {
      from_next_.emplace(p_.group_, p_.stage_ + 1, Channel::Gradient, m_, device, &links_.gradients_in);
    }
    if (p_.is_first()) {
      const std::string why = split_batch(input, m_, "input", &inputs_);
      if (!why.empty()) fail("before the first micro-batch: " + why);
    }
    if (p_.is_last()) {
      const std::string why = split_batch(target, m_, "target", &targets_);
      if (!why.empty()) fail("before the first micro-batch: " + why);
      if (why.empty()) target_rows_ = target.size(0);
    }
  }

  void run(const PipelineOp& op, size_t index) {
    if (p_.op_hook_ && error_.empty()) {
      try {
        p_.op_hook_(op, index);
      } catch (const std::exception& e) {
        fail("before " + std::string(op.type == PipelineOp::Type::Forward ? "the forward" : "the backward") +
             " of micro-batch " + std::to_string(op.micro_batch) + " (its op hook): " + error_text(e));
      }
    }
    op.type == PipelineOp::Type::Forward ? forward(op.micro_batch) : backward(op.micro_batch);
    // The op's sends are out; now the receives further ahead.
    if (from_prev_) from_prev_->top_up();
    if (from_next_) from_next_->top_up();
  }

  // Waits for the sends, then agrees with every stage on the outcome.
  torch::Tensor finish() {
    outbox_.wait();
    // One device-to-host copy per step, not one per micro-batch.
    const double loss = error_.empty() && loss_sum_.defined() ? loss_sum_.item<double>() : 0.0;
    const detail::StepOutcome outcome = detail::agree_on_outcome(*p_.group_, error_, loss);
    links_.exchanging = false;  // every message went both ways: the links are in step
    p_.stats_.peak_in_flight = peak_in_flight_;
    TORCH_CHECK(!outcome.failed, "pipeline step failed: ", outcome.error,
                outcome.failed_rank == p_.stage_ && own_error_
                    ? ""
                    : "\n  (" + p_.description_ + " stopped its step because of it)");
    if (p_.is_last()) return torch::tensor(loss, torch::kFloat64);
    if (!p_.options_.broadcast_loss) return torch::Tensor();
    return torch::tensor(outcome.loss, torch::kFloat64);
  }

 private:
  void fail(const std::string& what) {
    if (!error_.empty()) return;
    error_ = p_.description_ + " failed " + what;
    own_error_ = true;
  }
  detail::Message take(detail::Inbox& inbox) {
    const auto start = Clock::now();
    detail::Message msg = inbox.take();
    p_.stats_.recv_wait_s += seconds_since(start);
    return msg;
  }
  void adopt(detail::Message& msg) {
    if (msg.failed && error_.empty()) error_ = msg.error;
  }

  void forward(int m) {
    torch::Tensor x;
    if (p_.is_first()) {
      if (error_.empty()) x = inputs_[m];
    } else {
      detail::Message msg = take(*from_prev_);
      adopt(msg);
      x = msg.tensor;
    }
    torch::Tensor y;
    if (error_.empty()) {
      const auto start = Clock::now();
      try {
        y = compute_forward(m, x);
      } catch (const std::exception& e) {
        fail("in the forward of micro-batch " + std::to_string(m) + " on an input of shape " +
             describe(x) + ": " + error_text(e));
      }
      const double took = seconds_since(start);
      p_.stats_.forward_s += took;
      p_.stats_.compute_s += took;
      if (error_.empty() && !p_.is_last()) {
        const std::string why = detail::unsendable(y, links_.activations_out.enabled());
        if (!why.empty()) fail("in the forward of micro-batch " + std::to_string(m) + ": its output " + why);
      }
    }
    peak_in_flight_ = std::max(peak_in_flight_, ++in_flight_);
    if (p_.is_last()) return;
    if (error_.empty()) {
      outbox_.send_tensor(y.detach(), p_.stage_ + 1, Channel::Activation);
    } else {
      outbox_.send_error(error_, p_.stage_ + 1, Channel::Activation);
    }
  }

  // The stage's forward (and the weighted loss on the last stage); returns the output.
  torch::Tensor compute_forward(int m, torch::Tensor in) {
    if (!p_.is_first() && in.is_floating_point()) in.requires_grad_(true);
    torch::Tensor y = p_.module_->forward(in);
    saved_in_[m] = in;
    saved_out_[m] = y;
    if (p_.is_last()) {
      torch::Tensor loss = p_.loss_fn_(y, targets_[m]);
      TORCH_CHECK(loss.defined() && loss.numel() == 1, "the loss function returned ", describe(loss),
                  "; it must return one element (a mean or a sum)");
      // Weighted by rows: a mean-reduced loss then gives the whole batch's gradients.
      const double weight = static_cast<double>(targets_[m].size(0)) / target_rows_;
      saved_out_[m] = loss.reshape({}) * weight;
      loss_sum_ = loss_sum_.defined() ? loss_sum_ + saved_out_[m].detach() : saved_out_[m].detach();
    }
    return y;
  }

  void backward(int m) {
    torch::Tensor grad_out;
    if (!p_.is_last()) {
      detail::Message msg = take(*from_next_);
      adopt(msg);
      grad_out = msg.tensor;
    }
    torch::Tensor grad_in;
    if (error_.empty()) {
      const auto start = Clock::now();
      try {
        grad_in = compute_backward(m, grad_out);
      } catch (const std::exception& e) {
        fail("in the backward of micro-batch " + std::to_string(m) + ": " + error_text(e));
      }
      const double took = seconds_since(start);
      p_.stats_.backward_s += took;
      p_.stats_.compute_s += took;
      if (error_.empty() && !p_.is_first()) {
        const std::string why = detail::unsendable(grad_in, links_.gradients_out.enabled());
        if (!why.empty()) fail("in the backward of micro-batch " + std::to_string(m) + ": the input's gradient " + why);
      }
    }
    saved_in_[m] = saved_out_[m] = torch::Tensor();
    --in_flight_;
    if (p_.is_first()) return;
    if (error_.empty()) {
      outbox_.send_tensor(grad_in, p_.stage_ - 1, Channel::Gradient);
    } else {
      outbox_.send_error(error_, p_.stage_ - 1, Channel::Gradient);
    }
  }

  // Backpropagates micro-batch m's output; returns the gradient of its input
  // (undefined on the first stage).
  torch::Tensor compute_backward(int m, const torch::Tensor& grad_out) {
    const torch::Tensor& out = saved_out_[m];
    if (!p_.is_last()) {
      TORCH_CHECK(grad_out.sizes() == out.sizes() && grad_out.scalar_type() == out.scalar_type(),
                  "the gradient from stage ", p_.stage_ + 1, " is ", describe(grad_out),
                  " but this stage's output was ", describe(out));
    }
    if (out.requires_grad()) p_.is_last() ? out.backward() : out.backward(grad_out);
    if (p_.is_first()) return torch::Tensor();
    const torch::Tensor& in = saved_in_[m];
    return in.grad().defined() ? in.grad() : torch::zeros_like(in);
  }

  Pipeline& p_;
  const int m_;
  detail::StageLinks& links_;
  detail::Outbox outbox_;
  std::optional<detail::Inbox> from_prev_, from_next_;
  std::vector<torch::Tensor> inputs_, targets_;  // first / last stage: the micro-batches
  int64_t target_rows_ = 0;
  // saved_in_[m] / saved_out_[m]: micro-batch m's stage input and output (the
  // weighted loss on the last stage), held from its forward to its backward.
  std::vector<torch::Tensor> saved_in_, saved_out_;
  torch::Tensor loss_sum_;  // last stage: the weighted losses so far, on the stage's device
  int in_flight_ = 0, peak_in_flight_ = 0;
  std::string error_;       // the first failure this stage made or heard of; "" while all is well
  bool own_error_ = false;  // error_ is this stage's own
};

torch::Tensor Pipeline::step(const torch::Tensor& input, const torch::Tensor& target) {
  const auto start = Clock::now();
  stats_ = PipelineStepStats{};
  detail::begin_exchange(*links_, description_);
  StepRun run(*this, input, target);
  for (size_t i = 0; i < ops_.size(); ++i) run.run(ops_[i], i);
  try {
    torch::Tensor loss = run.finish();
    stats_.step_s = seconds_since(start);
    return loss;
  } catch (...) {
    stats_.step_s = seconds_since(start);
    throw;
  }
}

}  // namespace paisoar::pipeline
