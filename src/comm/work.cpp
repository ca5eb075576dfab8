// Work and WorkImpl: waiting for collectives and finishing their results.
#include "paisoar/comm/work.h"
#include "paisoar/error.h"

#include "paisoar/comm/types.h"
#include "src/comm/group_state.h"
#include "src/comm/work_impl.h"

namespace paisoar::comm {

Work::Work(std::shared_ptr<detail::WorkImpl> impl) : impl_(std::move(impl)) {}

void Work::wait() {
  if (impl_) impl_->wait();
}

bool Work::is_completed() const { return !impl_ || impl_->is_completed(); }

namespace detail {

void WorkImpl::wait() {
  std::lock_guard<std::mutex> lock(mutex_);
  if (done_) {
    if (error_) std::rethrow_exception(error_);
    return;
  }
  done_ = true;
  FlightRecorder::waiting(flight_);
  try {
    for (auto& work : works_) {
      try {
        work->wait();
      } catch (const std::exception& e) {
        throw_comm_error(context_, error_text(e), timeout_);
      }
    }
    for (auto& child : children_) child->wait();
    for (auto& step : steps_) step();
    for (auto& step : final_steps_) step();
  } catch (...) {
    error_ = std::current_exception();
    FlightRecorder::done(flight_, false);
    throw;
  }
  FlightRecorder::done(flight_, true);
  works_.clear();
  children_.clear();
  steps_.clear();
  final_steps_.clear();
}

bool WorkImpl::is_completed() const {
  std::unique_lock<std::mutex> lock(mutex_, std::try_to_lock);
  if (!lock.owns_lock()) return false;
  if (done_) return true;
  for (const auto& work : works_) {
    if (!work->isCompleted()) return false;
  }
  for (const auto& child : children_) {
    if (!child->is_completed()) return false;
  }
  return true;
}

namespace {

FlightRecorder::Ticket record(GroupState& state, int64_t seq, const char* op, const at::Tensor& tensor, int peer) {
  FlightRecorder* recorder = state.options.flight_recorder.get();
  if (!recorder || state.size == 1) return {};
  if (state.flight_group == -2) state.flight_group = recorder->group(state.name, state.global_ranks);
  const bool defined = tensor.defined();
  return recorder->issue(state.flight_group, seq, op, defined ? c10::toString(tensor.scalar_type()) : "-",
                         defined ? tensor.numel() : 0, peer);
}

}  // namespace

std::shared_ptr<WorkImpl> collective_work(GroupState& state, const std::string& context, const char* op,
                                          const at::Tensor& probe) {
  return std::make_shared<WorkImpl>(context, state.options.timeout, record(state, state.issued, op, probe, -1));
}

std::shared_ptr<WorkImpl> transfer_work(GroupState& state, const std::string& context, const char* op,
                                        const at::Tensor& tensor, int peer) {
  const int global_peer =
      peer >= 0 && peer < static_cast<int>(state.global_ranks.size()) ? state.global_ranks[static_cast<size_t>(peer)] : peer;
  return std::make_shared<WorkImpl>(context, state.options.timeout, record(state, -1, op, tensor, global_peer));
}

}  // namespace detail
}  // namespace paisoar::comm
