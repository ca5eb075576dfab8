// AsyncSaver: checkpoint.async's background writer. At most one save is in
// flight: starting the next one first waits for the one before (and rethrows
// its error), so saves are written in order and the ranks' background
// collectives (over a communicator of their own) pair up.
#pragma once

#include <functional>
#include <future>

namespace paisoar::train {

class AsyncSaver {
 public:
  AsyncSaver() = default;
  AsyncSaver(const AsyncSaver&) = delete;
  AsyncSaver& operator=(const AsyncSaver&) = delete;
  // Waits for the save in flight; its error, if any, is lost (call wait()
  // first to see it).
  ~AsyncSaver();

  // Waits for the save in flight (rethrowing its error), then runs `write`
  // on a background thread.
  void start(std::function<void()> write);
  // Waits for the save in flight, if any; rethrows its error. Returns the
  // seconds it waited.
  double wait();

 private:
  std::future<void> in_flight_;
};

}  // namespace paisoar::train
