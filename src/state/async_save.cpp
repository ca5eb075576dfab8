// AsyncSaver: one std::async task at a time.
#include "src/state/async_save.h"

#include <chrono>

namespace paisoar::train {

AsyncSaver::~AsyncSaver() {
  if (!in_flight_.valid()) return;
  try {
    in_flight_.get();
  } catch (...) {  // a destructor does not throw; fit() calls wait() when it ends normally
  }
}

double AsyncSaver::wait() {
  if (!in_flight_.valid()) return 0;
  const auto start = std::chrono::steady_clock::now();
  std::future<void> done = std::move(in_flight_);
  done.get();
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

void AsyncSaver::start(std::function<void()> write) {
  wait();
  in_flight_ = std::async(std::launch::async, std::move(write));
}

}  // namespace paisoar::train
