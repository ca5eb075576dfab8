// ShmWork and Lane (shm_work.h).
#include "src/comm/shm_work.h"

#include <c10/util/Exception.h>

namespace paisoar::comm::detail {

namespace {
constexpr int kYieldsBeforeSleep = 50;
}  // namespace

// A lane's tasks and who is running one. Shared with the ShmWorks that may
// run its tasks, so a Work that outlives its backend finds it still there
// (closed).
struct LaneQueue {
  using Clock = std::chrono::steady_clock;
  // How often an idle lane's thread looks for tasks queued without waking
  // it, and for how long after its last task it keeps looking.
  static constexpr auto kPoll = std::chrono::milliseconds(1);
  static constexpr auto kActive = std::chrono::milliseconds(100);

  std::mutex mutex;
  std::condition_variable changed;
  std::deque<std::function<void()>> tasks;
  bool running = false;       // a task is being run (by the thread or a waiter)
  bool closing = false;
  bool thread_asleep = false;  // the thread waits without a time limit
  Clock::time_point last_ran;

  // Runs the front task on this thread; `lock` is held before and after.
  void run_front(std::unique_lock<std::mutex>& lock) {
    std::function<void()> task = std::move(tasks.front());
    tasks.pop_front();
    running = true;
    lock.unlock();
    task();
    lock.lock();
    running = false;
    last_ran = Clock::now();
  }

  // A waiter's help: runs queued tasks, in order, until `done()` holds or
  // the lane's thread (or another waiter) is running one.
  void help_until(const std::function<bool()>& done) {
    std::unique_lock<std::mutex> lock(mutex);
    while (!done() && !running && !tasks.empty()) run_front(lock);
    if (!tasks.empty()) changed.notify_all();  // what is left is the thread's
  }

  void thread_loop() {
    std::unique_lock<std::mutex> lock(mutex);
    while (true) {
      if (!tasks.empty() && !running) {
        run_front(lock);
        continue;
      }
      if (closing && tasks.empty() && !running) return;
      if (Clock::now() - last_ran < kActive) {
        changed.wait_for(lock, kPoll);
      } else {
        thread_asleep = true;
        changed.wait(lock);
        thread_asleep = false;
      }
    }
  }
};

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
  if (lane_ && !isCompleted()) lane_->help_until([this] { return isCompleted(); });
  // Done by another thread soon (a receive's drainer, the lane's thread):
  // a short look, yielding the core, before sleeping on the condition.
  for (int i = 0; i < kYieldsBeforeSleep && !done_.load(std::memory_order_acquire); ++i) std::this_thread::yield();
  // The backend gives up at the group's timeout; wait a little longer so its message wins.
  const auto limit = (timeout.count() == 0 ? timeout_ : timeout) + std::chrono::seconds(1);
  std::unique_lock<std::mutex> lock(mutex_);
  if (!changed_.wait_for(lock, limit, [&] { return done_.load(); })) {
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

Lane::Lane() : queue_(std::make_shared<LaneQueue>()), thread_([q = queue_] { q->thread_loop(); }) {}

Lane::~Lane() {
  {
    std::lock_guard<std::mutex> lock(queue_->mutex);
    queue_->closing = true;
  }
  queue_->changed.notify_all();
  thread_.join();
}

bool Lane::run_here_if_idle(const std::function<void()>& task) {
  std::unique_lock<std::mutex> lock(queue_->mutex);
  if (queue_->running || !queue_->tasks.empty()) return false;
  queue_->running = true;
  lock.unlock();
  task();
  lock.lock();
  queue_->running = false;
  queue_->last_ran = LaneQueue::Clock::now();
  if (!queue_->tasks.empty()) queue_->changed.notify_all();  // queued while it ran: the thread's
  return true;
}

void Lane::push(std::function<void()> task, bool wake) {
  bool notify = wake;
  {
    std::lock_guard<std::mutex> lock(queue_->mutex);
    queue_->tasks.push_back(std::move(task));
    notify = notify || queue_->thread_asleep;
  }
  if (notify) queue_->changed.notify_all();
}

}  // namespace paisoar::comm::detail
