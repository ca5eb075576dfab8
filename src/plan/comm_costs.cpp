// Measuring and fitting collective costs on thread ranks of the run's transport.
#include "paisoar/plan/comm_costs.h"

#include <c10/util/Exception.h>
#include <torch/torch.h>

#include <algorithm>
#include <chrono>
#include <exception>
#include <thread>
#include <vector>

#include "paisoar/comm/communicator.h"
#include "paisoar/comm/store.h"

namespace paisoar::plan {
namespace {

constexpr Collective kAll[] = {Collective::Allreduce, Collective::Allgather, Collective::ReduceScatter,
                               Collective::Send};
constexpr int64_t kSizes[] = {4 << 10, 64 << 10, 512 << 10, 4 << 20};
constexpr int kRepeats = 7;

double run_once(comm::Communicator& c, Collective op, torch::Tensor& big, torch::Tensor& part) {
  const auto start = std::chrono::steady_clock::now();
  switch (op) {
    case Collective::Allreduce: c.allreduce(big).wait(); break;
    case Collective::Allgather: c.allgather_into(big, part).wait(); break;
    case Collective::ReduceScatter: c.reduce_scatter(part, big).wait(); break;
    case Collective::Send:
      if (c.rank() == 0) c.send(big, 1).wait();
      if (c.rank() == 1) c.recv(big, 0).wait();
      break;
  }
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

}  // namespace

const char* to_string(Collective op) {
  switch (op) {
    case Collective::Allreduce: return "allreduce";
    case Collective::Allgather: return "allgather";
    case Collective::ReduceScatter: return "reduce-scatter";
    case Collective::Send: return "send";
  }
  return "?";
}

double CommCosts::seconds(Collective op, int ranks, int64_t bytes) const {
  if (ranks <= 1 || bytes <= 0) return 0;
  const auto it = fits_.find({op, ranks});
  TORCH_CHECK(it != fits_.end(), "the planner has no measured cost of ", to_string(op), " over ", ranks, " ranks");
  return it->second.at(bytes);
}

LineFit fit_line(const std::vector<std::pair<double, double>>& points) {
  const double n = static_cast<double>(points.size());
  double sx = 0, sy = 0, sxx = 0, sxy = 0;
  for (const auto& [x, y] : points) {
    sx += x, sy += y, sxx += x * x, sxy += x * y;
  }
  LineFit fit;
  const double det = n * sxx - sx * sx;
  fit.seconds_per_byte = det > 0 ? std::max(0.0, (n * sxy - sx * sy) / det) : 0;
  fit.latency_s = std::max(0.0, (sy - fit.seconds_per_byte * sx) / n);
  return fit;
}

void measure_comm_costs(CommCosts& costs, comm::Backend backend, int ranks) {
  TORCH_CHECK(ranks >= 2, "measure_comm_costs needs 2 ranks or more");
  // times[op][size][repeat] as rank 0 saw them (collectives end together).
  std::vector<std::vector<std::vector<double>>> times(
      std::size(kAll), std::vector<std::vector<double>>(std::size(kSizes)));
  comm::Store store = comm::Store::hash();
  comm::CommOptions options;
  options.backend = backend;
  options.timeout = std::chrono::seconds(60);
  std::vector<std::exception_ptr> errors(ranks);
  std::vector<std::thread> threads;
  for (int rank = 0; rank < ranks; ++rank) {
    threads.emplace_back([&, rank] {
      try {
        torch::set_num_threads(1);
        auto c = comm::Communicator::create(store, rank, ranks, options);
        for (size_t o = 0; o < std::size(kAll); ++o) {
          for (size_t s = 0; s < std::size(kSizes); ++s) {
            const int64_t floats = kSizes[s] / 4 / ranks * ranks;
            torch::Tensor big = torch::ones({floats});
            torch::Tensor part = torch::ones({floats / ranks});
            c->barrier().wait();
            run_once(*c, kAll[o], big, part);  // warm-up
            for (int r = 0; r < kRepeats; ++r) {
              c->barrier().wait();
              const double t = run_once(*c, kAll[o], big, part);
              if (rank == (kAll[o] == Collective::Send ? 1 : 0)) times[o][s].push_back(t);
            }
          }
        }
        c->barrier().wait();
      } catch (...) {
        errors[rank] = std::current_exception();
      }
    });
  }
  for (auto& t : threads) t.join();
  for (auto& e : errors) {
    if (e) std::rethrow_exception(e);
  }
  for (size_t o = 0; o < std::size(kAll); ++o) {
    std::vector<std::pair<double, double>> points;
    for (size_t s = 0; s < std::size(kSizes); ++s) {
      auto& v = times[o][s];
      std::sort(v.begin(), v.end());
      points.emplace_back(static_cast<double>(kSizes[s]), v[v.size() / 2]);
    }
    costs.set(kAll[o], ranks, fit_line(points));
  }
}

}  // namespace paisoar::plan
