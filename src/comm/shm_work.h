// The pieces Backend::Shm runs its operations with: ShmWork, the c10d Work a
// caller waits on (finished by a backend thread, with an error or not), and
// Lane, a thread that runs tasks in the order they were queued.
#pragma once

#include <torch/csrc/distributed/c10d/Work.hpp>

#include <chrono>
#include <condition_variable>
#include <deque>
#include <functional>
#include <mutex>
#include <string>
#include <thread>

namespace paisoar::comm::detail {

class ShmWork : public ::c10d::Work {
 public:
  explicit ShmWork(std::chrono::milliseconds timeout) : timeout_(timeout) {}

  // Once only; later calls are ignored. An empty error means success.
  void finish(std::string error);
  bool isCompleted() override;
  bool wait(std::chrono::milliseconds timeout) override;

 private:
  std::chrono::milliseconds timeout_;
  std::mutex mutex_;
  std::condition_variable changed_;
  bool done_ = false;
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
  void push(std::function<void()> task);

 private:
  void run();
  std::mutex mutex_;
  std::condition_variable changed_;
  std::deque<std::function<void()>> tasks_;
  bool closing_ = false;
  std::thread thread_;  // last: starts after the rest is built
};

}  // namespace paisoar::comm::detail
