// Test support: run N ranks as threads in one process over an in-process store,
// the way multi-rank logic is tested without launching processes.
#pragma once

#include <exception>
#include <functional>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include <c10/util/Exception.h>

#include "paisoar/comm/communicator.h"
#include "paisoar/error.h"

namespace paisoar::testing {

// Test default: ranks are threads joined by the in-process backend (no
// sockets), so logic tests run anywhere; tests of the transport itself pass
// Backend::Gloo. A rank that failed an assertion leaves its peers waiting for
// at most 30 s, not the library's 5 minutes.
inline comm::CommOptions test_options(comm::Backend backend = comm::Backend::Threads) {
  comm::CommOptions options;
  options.backend = backend;
  options.timeout = std::chrono::seconds(30);
  return options;
}

// Calls fn(rank, comm) on `world` threads sharing one fresh HashStore. Every
// thread is joined; the first failure (by rank) is rethrown as runtime_error
// prefixed with its rank.
inline void run_ranks(int world,
                      const std::function<void(int, std::shared_ptr<comm::Communicator>)>& fn,
                      comm::CommOptions options = test_options()) {
  comm::Store store = comm::Store::hash();
  std::vector<std::exception_ptr> errors(world);
  std::vector<std::thread> threads;
  for (int rank = 0; rank < world; ++rank) {
    threads.emplace_back([&, rank] {
      try {
        fn(rank, comm::Communicator::create(store, rank, world, options));
      } catch (...) {
        errors[rank] = std::current_exception();
      }
    });
  }
  for (auto& t : threads) t.join();
  for (int rank = 0; rank < world; ++rank) {
    if (!errors[rank]) continue;
    try {
      std::rethrow_exception(errors[rank]);
    } catch (const std::exception& e) {
      throw std::runtime_error("rank " + std::to_string(rank) + ": " + error_text(e));
    }
  }
}

// Runs fn on `world` rank threads and returns each rank's error text ("" if
// none): for tests of what every rank is told when something fails.
inline std::vector<std::string> rank_errors(
    int world, const std::function<void(int, std::shared_ptr<comm::Communicator>)>& fn,
    comm::CommOptions options = test_options()) {
  std::vector<std::string> errors(world);
  std::mutex mutex;
  run_ranks(world, [&](int rank, std::shared_ptr<comm::Communicator> comm) {
    try {
      fn(rank, comm);
    } catch (const std::exception& e) {
      std::lock_guard<std::mutex> lock(mutex);
      errors[rank] = error_text(e);
    }
  }, options);
  return errors;
}

}  // namespace paisoar::testing
