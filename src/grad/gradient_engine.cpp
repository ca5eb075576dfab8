// GradientEngine: accumulator post-hooks, readiness per group, the
// once-per-backward callback, and the end-of-backward agreement (one int32
// allreduce: per parameter the ranks that produced a gradient, per rank an
// error flag; the lowest failing rank's message broadcast to all).
#include "paisoar/grad/gradient_engine.h"
#include "paisoar/error.h"

#include <c10/util/Exception.h>

#include <torch/csrc/autograd/engine.h>
#include <torch/csrc/autograd/utils/lambda_post_hook.h>
#include <torch/torch.h>

#include <cstring>
#include <stdexcept>
#include <unordered_set>

#include "paisoar/comm/communicator.h"
#include "src/util/torch_api.h"

namespace paisoar::grad {
namespace {

double seconds_between(std::chrono::steady_clock::time_point a, std::chrono::steady_clock::time_point b) {
  return std::chrono::duration<double>(b - a).count();
}

// Rank `root`'s text on every rank (collective).
std::string broadcast_text(comm::Communicator& comm, const std::string& text, int root) {
  torch::Tensor size = torch::tensor({static_cast<int64_t>(text.size())}, torch::kInt64);
  comm.broadcast(size, root).wait();
  torch::Tensor bytes = torch::zeros({size.item<int64_t>()}, torch::kUInt8);
  if (comm.rank() == root && !text.empty()) std::memcpy(bytes.data_ptr(), text.data(), text.size());
  if (bytes.numel() > 0) comm.broadcast(bytes, root).wait();
  return std::string(reinterpret_cast<const char*>(bytes.data_ptr()), static_cast<size_t>(bytes.numel()));
}

}  // namespace

struct GradientEngine::Hook {
  paisoar::detail::NodePtr accumulator;
  uintptr_t key = 0;
};

GradientEngine::GradientEngine(std::vector<NamedParameter> params, std::vector<std::vector<size_t>> groups,
                               GradientSink& sink, std::shared_ptr<comm::Communicator> comm,
                               EngineOptions options)
    : params_(std::move(params)), sink_(sink), comm_(std::move(comm)), options_(std::move(options)) {
  TORCH_CHECK(comm_, options_.component, ": the Communicator is null");
  TORCH_CHECK(!params_.empty(), options_.component, ": no parameter requires grad");
  ready_.assign(params_.size(), 0);
  unreachable_.assign(params_.size(), 0);
  used_.assign(params_.size(), 0);
  created_.assign(params_.size(), 0);
  expected_hooks_.assign(params_.size(), 0);
  hooks_seen_.assign(params_.size(), 0);
  set_groups(std::move(groups));
  for (size_t i = 0; i < params_.size(); ++i) {
    TORCH_CHECK(params_[i].tensor.requires_grad(), options_.component, ": parameter '", params_[i].name,
                "' does not require grad");
    auto hook = std::make_unique<Hook>();
    hook->accumulator = torch::autograd::impl::grad_accumulator(params_[i].tensor);
    hook->key = hook->accumulator->add_post_hook(std::make_unique<torch::autograd::utils::LambdaPostHook>(
        [this, i](const torch::autograd::variable_list& outputs, const torch::autograd::variable_list&) {
          on_gradient(i);
          return outputs;
        }));
    hooks_.push_back(std::move(hook));
  }
}

GradientEngine::~GradientEngine() {
  for (auto& hook : hooks_) hook->accumulator->del_post_hook(hook->key);
}

void GradientEngine::set_groups(std::vector<std::vector<size_t>> groups) {
  std::vector<size_t> group_of(params_.size(), groups.size());
  for (size_t g = 0; g < groups.size(); ++g) {
    for (size_t i : groups[g]) {
      TORCH_CHECK(i < params_.size() && group_of[i] == groups.size(), options_.component,
                  ": parameter index ", i, " is out of range or in two groups");
      group_of[i] = g;
    }
  }
  for (size_t i = 0; i < params_.size(); ++i) {
    TORCH_CHECK(group_of[i] < groups.size(), options_.component, ": parameter '", params_[i].name,
                "' is in no group");
  }
  groups_ = std::move(groups);
  group_of_ = std::move(group_of);
  pending_.resize(groups_.size());
  for (size_t g = 0; g < groups_.size(); ++g) pending_[g] = groups_[g].size();
}

void GradientEngine::set_sync(bool on) {
  std::lock_guard<std::mutex> lock(mutex_);
  sync_ = on;
}

bool GradientEngine::sync() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return sync_;
}

bool GradientEngine::in_backward() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return in_backward_;
}

bool GradientEngine::accumulator_replaced(size_t param) const {
  return torch::autograd::impl::try_get_grad_accumulator(params_[param].tensor).get() !=
         hooks_[param]->accumulator.get();
}

void GradientEngine::begin_forward() {
  std::lock_guard<std::mutex> lock(mutex_);
  if (in_backward_) {
    // The last backward failed inside autograd: its callback never ran.
    sink_.drain();
    sink_.end_backward(synchronised_);
    std::fill(used_.begin(), used_.end(), 0);
    std::fill(created_.begin(), created_.end(), 0);
    error_.clear();
    reset_backward();
  }
  std::fill(unreachable_.begin(), unreachable_.end(), 0);
  finished_ = false;
  armed_ = torch::GradMode::is_enabled();
  if (!next_forward_error_.empty()) {
    const std::string message = std::move(next_forward_error_);
    next_forward_error_.clear();
    C10_THROW_ERROR(Error, message);
  }
}

void GradientEngine::set_static_graph(const std::string& caller) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (synchronised_once_ || in_backward_) {
    C10_THROW_ERROR(Error, options_.component + ": " + caller +
                               " should be called before training loop starts and after "
                               "DistributedDataParallel is constructed; pass static_graph=True to the "
                               "constructor instead");
  }
  options_.static_graph = true;
}

std::string GradientEngine::option_set_to(bool value) const {
  if (options_.python_literals) return options_.find_unused_option + (value ? "=True" : "=False");
  return options_.find_unused_option + (value ? " = true" : " = false");
}

void GradientEngine::mark_unreachable(const std::vector<torch::Tensor>& outputs) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (!options_.find_unused_parameters || !sync_ || !torch::GradMode::is_enabled() || outputs.empty()) return;
  // Accumulators the graph does not reach belong to parameters the loss cannot use.
  std::unordered_set<torch::autograd::Node*> seen;
  std::vector<torch::autograd::Node*> stack;
  for (const auto& out : outputs) {
    if (!out.defined() || !out.requires_grad()) continue;
    auto fn = out.grad_fn() ? out.grad_fn() : torch::autograd::impl::try_get_grad_accumulator(out);
    if (fn && seen.insert(fn.get()).second) stack.push_back(fn.get());
  }
  while (!stack.empty()) {
    auto* node = stack.back();
    stack.pop_back();
    for (const auto& edge : node->next_edges()) {
      if (edge.function && seen.insert(edge.function.get()).second) stack.push_back(edge.function.get());
    }
  }
  for (size_t i = 0; i < params_.size(); ++i) unreachable_[i] = seen.count(hooks_[i]->accumulator.get()) ? 0 : 1;
}

void GradientEngine::record_error(const std::string& message) {
  if (error_.empty()) error_ = message;
}

void GradientEngine::reset_backward() {
  in_backward_ = false;
  synchronised_ = false;
  std::fill(ready_.begin(), ready_.end(), 0);
  std::fill(hooks_seen_.begin(), hooks_seen_.end(), 0);
  for (size_t g = 0; g < groups_.size(); ++g) pending_[g] = groups_[g].size();
  arrival_.clear();
}

void GradientEngine::mark_ready(size_t index) {
  ready_[index] = 1;
  const size_t g = group_of_[index];
  if (--pending_[g] == 0) group_complete(g);
}

void GradientEngine::group_complete(size_t g) {
  try {
    if (synchronised_) {
      sink_.group_ready(g);
    } else {
      sink_.local_group_done(g);
    }
  } catch (const std::exception& e) {
    record_error(error_text(e));
  }
}

void GradientEngine::start_backward() {
  if (options_.one_backward_per_forward && !options_.sync_only_after_forward && finished_ && sync_) {
    // No collective is pending and every rank runs the same program: safe to throw here.
    C10_THROW_ERROR(Error, 
        options_.component +
        ": a second backward after the one that averaged this step's gradients (e.g. "
        "loss1.backward(retain_graph) then loss2.backward()); its gradients would not be averaged. "
        "Sum the losses and call backward once, or run the earlier backward passes under no_sync()");
  }
  in_backward_ = true;
  synchronised_ = sync_ && (armed_ || !options_.sync_only_after_forward);
  first_ready_ = Clock::now();
  torch::autograd::Engine::get_default_engine().queue_callback([this] {
    std::lock_guard<std::mutex> lock(mutex_);
    if (synchronised_) {
      finish_synchronised();
      return;
    }
    sink_.end_backward(false);  // a local pass: its errors wait for the next synchronised backward
    reset_backward();
  });
  // A group without parameters (a layer without weights) is complete at once.
  for (size_t g = 0; g < groups_.size(); ++g) {
    if (groups_[g].empty()) group_complete(g);
  }
  if (!synchronised_) return;
  for (size_t i = 0; i < params_.size(); ++i) {
    const bool static_unused = options_.static_graph && static_learned_ && expected_hooks_[i] == 0;
    if (!unreachable_[i] && !static_unused) continue;
    try {
      if (sink_.adopt(i)) created_[i] = 1;
    } catch (const std::exception& e) {
      record_error(error_text(e));
    }
    mark_ready(i);
  }
}

void GradientEngine::on_gradient(size_t index) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (!in_backward_) start_backward();
  // Autograd may hand an accumulator no gradient (an undefined one): where
  // unused parameters are allowed that is no use, and the .grad stays as it
  // was, as in torch's DDP; otherwise it counts as a zero gradient.
  if (params_[index].tensor.grad().defined() || !(options_.find_unused_parameters || options_.static_graph)) {
    used_[index] = 1;
  }
  if (options_.static_graph && synchronised_) {
    on_static_gradient(index);
    return;
  }
  if (ready_[index]) {
    // A local pass may accumulate twice (reentrant checkpointing): the sum is right.
    if (!synchronised_) return;
    const auto& name = params_[index].name;
    record_error(options_.component + ": parameter '" + name + "' received a gradient although " +
                 (unreachable_[index]
                      ? "forward's outputs do not reach it (the loss uses it outside the module's "
                        "forward, e.g. a penalty on the weights); return such terms from forward, or set " +
                            options_.find_unused_option + " = false"
                      : std::string("it already had one in this backward (reentrant backward, e.g. "
                                    "reentrant activation checkpointing); use a non-reentrant variant")));
    return;
  }
  try {
    if (sink_.adopt(index)) created_[index] = 1;
  } catch (const std::exception& e) {
    record_error(error_text(e));  // the group still launches, with this slice as it is
  }
  arrival_.push_back(index);
  mark_ready(index);
}

// REQUIRES: mutex_ is held. static_graph, a synchronised backward: the
// first one only counts (every group launches at its end); later ones launch
// a group when its parameters' counts are reached.
void GradientEngine::on_static_gradient(size_t index) {
  const int seen = ++hooks_seen_[index];
  if (static_learned_ && seen > expected_hooks_[index]) {
    record_error(options_.component + ": parameter '" + params_[index].name + "' received gradient number " +
                 std::to_string(seen) + " in this backward, but " + std::to_string(expected_hooks_[index]) +
                 " in the first iteration. Your training graph has changed in this iteration; this is not "
                 "compatible with static_graph=True (use find_unused_parameters=True instead)");
    return;
  }
  try {
    if (sink_.adopt(index)) created_[index] = 1;
  } catch (const std::exception& e) {
    record_error(error_text(e));
  }
  if (seen == 1) arrival_.push_back(index);
  if (static_learned_ && seen == expected_hooks_[index]) mark_ready(index);
}

// REQUIRES: mutex_ is held. static_graph after the first backward: each
// parameter's count must be the first backward's.
void GradientEngine::check_static_counts() {
  std::vector<size_t> missing;
  for (size_t i = 0; i < params_.size(); ++i) {
    if (hooks_seen_[i] < expected_hooks_[i]) missing.push_back(i);
  }
  if (missing.empty() || !next_forward_error_.empty()) return;
  next_forward_error_ =
      options_.component +
      ": Expected to have finished reduction in the prior iteration before starting a new one. This error "
      "indicates that your training graph has changed in this iteration, e.g., one parameter is used in first "
      "iteration, but then got unused in the second iteration. this is not compatible with static_graph set to "
      "True.\n" + missing_lines(missing, {});
}

// REQUIRES: mutex_ is held.
void GradientEngine::finish_synchronised() {
  const auto callback_start = Clock::now();
  stats_ = BackwardStats{};
  stats_.backward_s = seconds_between(first_ready_, callback_start);
  struct EndOfBackward {
    GradientEngine* self;
    ~EndOfBackward() {
      self->sink_.end_backward(true);
      self->reset_backward();
      std::fill(self->used_.begin(), self->used_.end(), 0);
      std::fill(self->created_.begin(), self->created_.end(), 0);
      std::fill(self->unreachable_.begin(), self->unreachable_.end(), 0);
      self->error_.clear();
      self->finished_ = true;
      self->armed_ = false;
      self->synchronised_once_ = true;
    }
  } end{this};

  // Gradients that never came count as zeros here (an error below unless
  // find_unused_parameters); every group is launched so no rank is left waiting.
  for (size_t i = 0; i < params_.size(); ++i) {
    if (ready_[i]) continue;
    try {
      if (sink_.adopt(i)) created_[i] = 1;
    } catch (const std::exception& e) {
      record_error(error_text(e));
    }
    mark_ready(i);
  }
  try {
    sink_.launch_remaining();
  } catch (const std::exception& e) {
    record_error(error_text(e));
  }
  const auto wait_start = Clock::now();
  const std::vector<int> status = agree(/*joined=*/false);
  stats_.exposed_comm_s = seconds_between(wait_start, Clock::now());
  if (options_.static_graph) {
    if (static_learned_) {
      check_static_counts();
    } else {
      expected_hooks_ = hooks_seen_;
      static_learned_ = true;
    }
  }
  check_missing(status);
  sink_.synchronised(arrival_);
}

// REQUIRES: mutex_ is held.
std::vector<int> GradientEngine::agree(bool joined) {
  const auto n = static_cast<int64_t>(params_.size());
  const int world = comm_->size();
  // Per parameter the ranks that produced a gradient, per rank an error
  // flag, and the number of joined ranks.
  torch::Tensor status = torch::zeros({n + world + 1}, torch::kInt32);
  if (!joined) std::copy(used_.begin(), used_.end(), status.data_ptr<int>());
  status[n + comm_->rank()] = error_.empty() ? 0 : 1;
  status[n + world] = joined ? 1 : 0;
  // The agreement is launched after every group (Gloo pairs collectives by
  // issue order) and waited for after them. A failure while waiting (a
  // collective timed out) propagates as it is: every rank sees its own.
  torch::Tensor sent = status.to(params_.front().tensor.device());
  comm::Work agreement = comm_->allreduce(sent, comm::ReduceOp::Sum);
  if (joined) {
    sink_.shadow_wait_all();
  } else {
    sink_.wait_all();
  }
  agreement.wait();
  stats_.agreement_bytes = sent.numel() * sent.element_size();
  const torch::Tensor counts = sent.cpu();
  std::vector<int> out(counts.data_ptr<int>(), counts.data_ptr<int>() + counts.numel());
  for (int r = 0; r < world; ++r) {
    if (out[n + r] == 0) continue;
    const std::string message = broadcast_text(*comm_, error_, r);
    C10_THROW_ERROR(Error, world == 1 ? message
                                        : message + " [rank " + std::to_string(r) + " of " +
                                              std::to_string(world) + "; every rank stops at this backward]");
  }
  return out;
}

// REQUIRES: mutex_ is held. After the agreement: parameters some rank did
// not produce a gradient for.
void GradientEngine::check_missing(const std::vector<int>& status) {
  const size_t n = params_.size();
  const int world = comm_->size();
  const int active = world - status[n + world];
  std::vector<size_t> missing_here, missing_elsewhere;
  for (size_t i = 0; i < n; ++i) {
    const int c = status[i];
    if (c >= active) continue;
    if (options_.find_unused_parameters || options_.static_graph) {
      if (c == 0) sink_.unused_everywhere(i, created_[i] != 0);
      continue;
    }
    const std::string count = std::to_string(active - c) + " of " + std::to_string(active) + " ranks";
    if (!options_.missing_gradient_error_at_next_forward) {
      C10_THROW_ERROR(Error, options_.component + ": parameter '" + params_[i].name +
                                 "' received no gradient in this backward on " + count + " (this rank: " +
                                 (used_[i] ? "got one" : "none") +
                                 "). If the model's forward may leave parameters out of the loss, set " +
                                 option_set_to(true) + "; otherwise make every parameter take part");
    }
    (used_[i] ? missing_elsewhere : missing_here).push_back(i);
  }
  if ((missing_here.empty() && missing_elsewhere.empty()) || !next_forward_error_.empty()) return;
  next_forward_error_ =
      options_.component +
      ": Expected to have finished reduction in the prior iteration before starting a new one. This error "
      "indicates that your module has parameters that were not used in producing loss. You can enable unused "
      "parameter detection by passing the keyword argument `" + option_set_to(true) +
      "` to `DistributedDataParallel`, and by making sure all `forward` function outputs participate in "
      "calculating loss.\n" + missing_lines(missing_here, missing_elsewhere);
}

std::string GradientEngine::missing_lines(const std::vector<size_t>& here, const std::vector<size_t>& elsewhere) const {
  const std::string rank = std::to_string(comm_->rank());
  auto names = [&](const std::vector<size_t>& list) {
    std::string out;
    for (size_t i : list) out += (out.empty() ? "" : ", ") + params_[i].name;
    return out;
  };
  auto indices = [](const std::vector<size_t>& list) {
    std::string out;
    for (size_t i : list) out += (out.empty() ? "" : " ") + std::to_string(i);
    return out;
  };
  std::string text;
  if (!here.empty()) {
    text = "Parameter indices which did not receive grad for rank " + rank + ": " + indices(here) +
           "\nParameters which did not receive grad for rank " + rank + ": " + names(here);
  }
  if (!elsewhere.empty()) {
    text += std::string(text.empty() ? "" : "\n") + "Parameters this rank has a gradient for but another rank has not: " +
            names(elsewhere);
  }
  return text;
}

void GradientEngine::shadow_backward() {
  std::lock_guard<std::mutex> lock(mutex_);
  TORCH_CHECK(!in_backward_, options_.component, ": shadow_backward() during a backward");
  error_.clear();
  try {
    sink_.shadow_launch_all();
  } catch (const std::exception& e) {
    record_error(error_text(e));
  }
  agree(/*joined=*/true);
  synchronised_once_ = true;
  sink_.synchronised({});
}

}  // namespace paisoar::grad
