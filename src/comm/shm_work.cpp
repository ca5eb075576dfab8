// ShmWork and Lane (shm_work.h).
#include "src/comm/shm_work.h"

#include <c10/util/Exception.h>

namespace paisoar::comm::detail {

void ShmWork::finish(std::string error) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (done_) return;
  done_ = true;
  error_ = std::move(error);
  changed_.notify_all();
}

bool ShmWork::isCompleted() {
  std::lock_guard<std::mutex> lock(mutex_);
  return done_;
}

bool ShmWork::wait(std::chrono::milliseconds timeout) {
  // The backend gives up at the group's timeout; wait a little longer so its message wins.
  const auto limit = (timeout.count() == 0 ? timeout_ : timeout) + std::chrono::seconds(1);
  std::unique_lock<std::mutex> lock(mutex_);
  if (!changed_.wait_for(lock, limit, [&] { return done_; })) {
    C10_THROW_ERROR(DistBackendError, "shm backend: timed out after " + std::to_string(limit.count()) +
                                          " ms waiting for this rank's earlier operations");
  }
  if (!error_.empty()) C10_THROW_ERROR(DistBackendError, error_);
  return true;
}

void run_to_finish(ShmWork& work, const std::function<void()>& body) {
  std::string error;
  try {
    body();
  } catch (const c10::Error& e) {
    error = e.what_without_backtrace();
  } catch (const std::exception& e) {
    error = std::string("shm backend: ") + e.what();
  } catch (...) {
    error = "shm backend: unknown exception";
  }
  work.finish(error);
}

Lane::Lane() : thread_([this] { run(); }) {}

Lane::~Lane() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    closing_ = true;
  }
  changed_.notify_all();
  thread_.join();
}

void Lane::push(std::function<void()> task) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    tasks_.push_back(std::move(task));
  }
  changed_.notify_all();
}

void Lane::run() {
  while (true) {
    std::function<void()> task;
    {
      std::unique_lock<std::mutex> lock(mutex_);
      changed_.wait(lock, [&] { return closing_ || !tasks_.empty(); });
      if (tasks_.empty()) return;
      task = std::move(tasks_.front());
      tasks_.pop_front();
    }
    task();
  }
}

}  // namespace paisoar::comm::detail
