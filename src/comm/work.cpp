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
    throw;
  }
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

}  // namespace detail
}  // namespace paisoar::comm
