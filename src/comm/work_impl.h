// WorkImpl: a collective in flight, as c10d works to wait for plus the steps
// that finish the result on this rank (AVG division, casts, local sums, copies).
#pragma once

#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "src/comm/c10d_types.h"
#include "src/comm/flight_recorder.h"

namespace paisoar::comm::detail {

class WorkImpl {
 public:
  WorkImpl(std::string context, std::chrono::milliseconds timeout, FlightRecorder::Ticket flight = {})
      : context_(std::move(context)), timeout_(timeout), flight_(flight) {}

  const std::string& context() const { return context_; }
  void add(C10dWorkPtr work) { works_.push_back(std::move(work)); }
  void add(std::shared_ptr<WorkImpl> child) { children_.push_back(std::move(child)); }
  // Runs after every added work and child completed, in the order added.
  void then(std::function<void()> step) { steps_.push_back(std::move(step)); }
  // Runs after all `then` steps: copying staged results back into the caller's tensors.
  void finally(std::function<void()> step) { final_steps_.push_back(std::move(step)); }

  // Waits for works and children, then runs the steps once. A failure is
  // rethrown as CommError, again on every later call.
  void wait();
  // Never blocks: false while another thread is inside wait().
  bool is_completed() const;

 private:
  std::string context_;
  std::chrono::milliseconds timeout_;
  FlightRecorder::Ticket flight_;  // marked done (or failed) by wait()
  std::vector<C10dWorkPtr> works_;
  std::vector<std::shared_ptr<WorkImpl>> children_;
  std::vector<std::function<void()>> steps_;
  std::vector<std::function<void()>> final_steps_;
  mutable std::mutex mutex_;  // held by wait() throughout; guards everything below
  bool done_ = false;
  std::exception_ptr error_;
};

}  // namespace paisoar::comm::detail
