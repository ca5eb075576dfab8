// The pieces Backend::Shm runs its operations with: ShmWork, the c10d Work a
// caller waits on (finished by a backend thread or by the waiting caller,
// with an error or not), and Lane, which runs tasks in the order they were
// queued: on its own thread, or on the thread of a caller who waits for one
// of them while the lane's thread is idle (so a collective that is waited on
// at once runs on the caller's thread, with no hand-off between threads).
#pragma once

#include <torch/csrc/distributed/c10d/Work.hpp>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

namespace paisoar::comm::detail {

struct LaneQueue;

class ShmWork : public ::c10d::Work {
 public:
  // `lane`: the queue whose tasks wait() may run itself until this is done
  // (null: wait only).
  explicit ShmWork(std::chrono::milliseconds timeout, std::shared_ptr<LaneQueue> lane = nullptr)
      : timeout_(timeout), lane_(std::move(lane)) {}

  // Once only; later calls are ignored. An empty error means success.
  void finish(std::string error);
  bool isCompleted() override;
  bool wait(std::chrono::milliseconds timeout) override;

 private:
  std::chrono::milliseconds timeout_;
  std::shared_ptr<LaneQueue> lane_;
  std::mutex mutex_;
  std::condition_variable changed_;
  std::atomic<bool> done_{false};  // written under mutex_; read without it by wait()'s first look
  std::string error_;
};

// Runs `body` and finishes `work` with its c10::Error's text, if any.
void run_to_finish(ShmWork& work, const std::function<void()>& body);

class Lane {
 public:
  Lane();
  ~Lane();  // runs what is queued, then joins
  Lane(const Lane&) = delete;
  Lane& operator=(const Lane&) = delete;

  // Queues `task`. `wake`: the lane's thread starts on it at once. Otherwise
  // it is left for a caller waiting on it (ShmWork::wait) to run, and the
  // lane's thread takes it at its next look (within a millisecond while the
  // lane has been busy lately; at once after a long idle).
  void push(std::function<void()> task, bool wake = true);
  // Runs `task` on the calling thread now if nothing is queued or running
  // (so it keeps its place in the order); returns false, without running
  // it, otherwise.
  bool run_here_if_idle(const std::function<void()>& task);
  // The queue, for the ShmWorks whose waits may run its tasks.
  const std::shared_ptr<LaneQueue>& queue() const { return queue_; }

 private:
  std::shared_ptr<LaneQueue> queue_;
  std::thread thread_;  // last: starts after the rest is built
};

}  // namespace paisoar::comm::detail
