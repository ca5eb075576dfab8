// Pipeline::step: runs this stage's op list over M micro-batches. A failure
// (a layer's exception, a bad shape, too few rows) does not stop the list:
// the stage goes on answering its neighbours with the error instead of
// tensors, so every rank reaches the end of the step, where one allgather
// tells all of them whether to return the loss or throw the first error.
#include <torch/torch.h>

#include <chrono>
#include <cstring>
#include <optional>
#include <sstream>

#include "paisoar/pipeline/pipeline.h"
#include "src/pipeline/stage_link.h"

namespace paisoar::pipeline {
namespace {

using Clock = std::chrono::steady_clock;
using detail::Channel;

double seconds_since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

std::string describe(const torch::Tensor& t) {
  if (!t.defined()) return "undefined";
  std::ostringstream out;
  out << t.sizes() << " (" << t.scalar_type() << ")";
  return out.str();
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

torch::Device stage_device(const torch::nn::Sequential& module) {
  for (const auto& p : module->parameters()) return p.device();
  for (const auto& b : module->buffers()) return b.device();
  return torch::Device(torch::kCPU);
}

}  // namespace

torch::Tensor Pipeline::step(const torch::Tensor& input, const torch::Tensor& target) {
  const auto step_start = Clock::now();
  stats_ = PipelineStepStats{};
  const int micro_batches = options_.micro_batches;
  const torch::Device device = stage_device(module_);
  // Every receive of the step is posted now (see stage_link.h).
  detail::Outbox outbox(group_);
  std::optional<detail::Inbox> from_prev, from_next;
  if (!is_first()) from_prev.emplace(group_, stage_ - 1, Channel::Activation, micro_batches, device);
  if (!is_last()) from_next.emplace(group_, stage_ + 1, Channel::Gradient, micro_batches, device);
  auto poll = [&] {
    if (from_prev) from_prev->poll();
    if (from_next) from_next->poll();
  };
  std::string error;  // the first failure this stage made or heard of; "" while all is well
  auto fail = [&](const std::string& what) {
    if (error.empty()) error = description_ + " failed " + what;
  };

  std::vector<torch::Tensor> inputs, targets;
  if (is_first()) {
    std::string why = split_batch(input, micro_batches, "input", &inputs);
    if (!why.empty()) fail("before the first micro-batch: " + why);
  }
  int64_t target_rows = 0;
  if (is_last()) {
    std::string why = split_batch(target, micro_batches, "target", &targets);
    if (!why.empty()) fail("before the first micro-batch: " + why);
    if (why.empty()) target_rows = target.size(0);
  }

  // saved_in[m] / saved_out[m]: micro-batch m's stage input and output (the
  // weighted loss on the last stage), held from its forward to its backward.
  std::vector<torch::Tensor> saved_in(micro_batches), saved_out(micro_batches);
  torch::Tensor loss_sum = torch::zeros({}, torch::kFloat64);
  int in_flight = 0;

  for (const PipelineOp& op : ops_) {
    const int m = op.micro_batch;
    poll();
    if (op.type == PipelineOp::Type::Forward) {
      torch::Tensor x;
      if (is_first()) {
        if (error.empty()) x = inputs[m];
      } else {
        detail::Message msg = from_prev->take();
        if (msg.failed && error.empty()) error = msg.error;
        x = msg.tensor;
      }
      torch::Tensor y;
      if (error.empty()) {
        const auto start = Clock::now();
        try {
          torch::Tensor in = x;
          if (!is_first() && in.is_floating_point()) in.requires_grad_(true);
          y = module_->forward(in);
          saved_in[m] = in;
          if (is_last()) {
            torch::Tensor loss = loss_fn_(y, targets[m]);
            TORCH_CHECK(loss.defined() && loss.numel() == 1, "the loss function returned ",
                        describe(loss), "; it must return one element (a mean or a sum)");
            const double weight = static_cast<double>(targets[m].size(0)) / target_rows;
            saved_out[m] = loss.reshape({}) * weight;
            loss_sum += saved_out[m].detach().to(torch::kCPU, torch::kFloat64);
          } else {
            saved_out[m] = y;
          }
        } catch (const std::exception& e) {
          const auto* c10 = dynamic_cast<const c10::Error*>(&e);
          fail("in the forward of micro-batch " + std::to_string(m) + " on an input of shape " +
               describe(x) + ": " + (c10 ? c10->what_without_backtrace() : e.what()));
        }
        stats_.compute_s += seconds_since(start);
      }
      stats_.peak_in_flight = std::max(stats_.peak_in_flight, ++in_flight);
      if (!is_last()) {
        if (error.empty()) {
          outbox.send_tensor(y.detach(), stage_ + 1, Channel::Activation);
        } else {
          outbox.send_error(error, stage_ + 1, Channel::Activation);
        }
      }
      continue;
    }
    // Backward
    torch::Tensor grad_out;
    if (!is_last()) {
      detail::Message msg = from_next->take();
      if (msg.failed && error.empty()) error = msg.error;
      grad_out = msg.tensor;
    }
    torch::Tensor grad_in;
    if (error.empty()) {
      const auto start = Clock::now();
      try {
        const torch::Tensor& out = saved_out[m];
        if (!is_last()) {
          TORCH_CHECK(grad_out.sizes() == out.sizes() && grad_out.scalar_type() == out.scalar_type(),
                      "the gradient from stage ", stage_ + 1, " is ", describe(grad_out),
                      " but this stage's output was ", describe(out));
        }
        if (out.requires_grad()) is_last() ? out.backward() : out.backward(grad_out);
        if (!is_first()) {
          grad_in = saved_in[m].grad().defined() ? saved_in[m].grad() : torch::zeros_like(saved_in[m]);
        }
      } catch (const std::exception& e) {
        const auto* c10 = dynamic_cast<const c10::Error*>(&e);
        fail("in the backward of micro-batch " + std::to_string(m) + ": " +
             (c10 ? c10->what_without_backtrace() : e.what()));
      }
      stats_.compute_s += seconds_since(start);
    }
    saved_in[m] = torch::Tensor();
    saved_out[m] = torch::Tensor();
    --in_flight;
    if (!is_first()) {
      if (error.empty()) {
        outbox.send_tensor(grad_in, stage_ - 1, Channel::Gradient);
      } else {
        outbox.send_error(error, stage_ - 1, Channel::Gradient);
      }
    }
  }
  outbox.wait();

  // Every rank learns whether any stage failed (a failure in the last backward
  // of stage 0 reaches nobody else through the pipeline) and the loss.
  torch::Tensor mine = torch::tensor({error.empty() ? 0.0 : 1.0, loss_sum.item<double>()}, torch::kFloat64);
  torch::Tensor all = mine;
  if (stages_ > 1) {
    // c10d's allgather: its tags do not depend on how many sends and recvs each
    // rank issued, which differ between stages (allgather_into's did, before the
    // comm fix of the same branch).
    all = torch::empty({stages_, 2}, torch::kFloat64);
    std::vector<torch::Tensor> rows;
    for (int r = 0; r < stages_; ++r) rows.push_back(all[r]);
    group_->allgather(rows, mine).wait();
  }
  const auto* a = all.data_ptr<double>();
  int first_failed = -1;
  for (int r = 0; r < stages_ && first_failed < 0; ++r) {
    if (a[2 * r] != 0) first_failed = r;
  }
  if (first_failed >= 0) {
    // The first failed rank's text goes to all: its length, then its bytes.
    torch::Tensor length = torch::tensor({static_cast<int64_t>(error.size())}, torch::kInt64);
    if (stages_ > 1) group_->broadcast(length, first_failed).wait();
    torch::Tensor bytes = torch::empty({length.item<int64_t>()}, torch::kUInt8);
    if (stage_ == first_failed) std::memcpy(bytes.data_ptr(), error.data(), error.size());
    if (stages_ > 1 && bytes.numel() > 0) group_->broadcast(bytes, first_failed).wait();
    std::string text(static_cast<const char*>(bytes.data_ptr()), static_cast<size_t>(bytes.numel()));
    stats_.step_s = seconds_since(step_start);
    TORCH_CHECK(false, "pipeline step failed: ", text,
                error.empty() ? "\n  (" + description_ + " stopped its step because of it)" : "");
  }
  stats_.step_s = seconds_since(step_start);
  if (is_last()) return loss_sum;
  if (!options_.broadcast_loss) return torch::Tensor();
  return torch::tensor(a[2 * (stages_ - 1) + 1], torch::kFloat64);
}

}  // namespace paisoar::pipeline
