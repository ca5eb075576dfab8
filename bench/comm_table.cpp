// run_comm_table: the measurement loop of `paisoar bench comm` (comm_table.h).
#include "bench/comm_table.h"

#include <torch/version.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <map>
#include <sstream>
#include <stdexcept>

#include <nlohmann/json.hpp>

#include "bench/measure_pair.h"

namespace paisoar::bench {
namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

// One side's tensors for one size: each side has its own, so every side
// starts from the same cache state.
struct Buffers {
  at::Tensor t, bf, shard, gathered;
  std::vector<at::Tensor> list;
  Buffers(int64_t numel, int n) {
    // Zeros: sums stay zero, so no side ever meets infinities or subnormals.
    t = at::zeros({numel});
    bf = at::zeros({numel}, at::kBFloat16);
    shard = at::zeros({numel / n});
    gathered = at::zeros({numel});
    for (int r = 0; r < n; ++r) list.push_back(at::zeros({numel / n}));
  }
};

std::function<void()> call_of(CommSide& side, Buffers& b, const std::string& op) {
  if (op == "allreduce") return [&] { side.allreduce(b.t, false); };
  if (op == "allreduce_avg") return [&] { side.allreduce(b.t, true); };
  if (op == "allreduce_bf16") return [&] { side.allreduce(b.bf, false); };
  if (op == "reduce_scatter") return [&] { side.reduce_scatter(b.shard, b.t); };
  if (op == "allgather_into") return [&] { side.allgather_into(b.gathered, b.shard); };
  if (op == "allgather") return [&] { side.allgather(b.list, b.shard); };
  if (op == "broadcast") return [&] { side.broadcast(b.t, 0); };
  throw std::invalid_argument("bench comm: no op '" + op + "'");
}

// Bytes each rank's tensor holds for `op` (the size the row is named by).
int64_t tensor_bytes(const std::string& op, int64_t numel) {
  return op == "allreduce_bf16" ? numel * 2 : numel * 4;
}

// Median seconds of one memcpy of `bytes`, every rank copying at once.
double memcpy_seconds(int64_t bytes, int iters, int repeats, const std::function<void()>& barrier) {
  std::vector<char> from(bytes, 1), to(bytes, 0);
  std::vector<double> samples;
  for (int r = 0; r < repeats; ++r) {
    barrier();
    const auto start = Clock::now();
    for (int i = 0; i < iters; ++i) {
      std::memcpy(to.data(), from.data(), bytes);
      asm volatile("" : : "r"(to.data()) : "memory");  // the copy is not optimised away
    }
    samples.push_back(seconds_since(start) / iters);
  }
  return median(std::move(samples));
}

struct Row {
  int64_t bytes;
  std::string op;
  std::vector<double> seconds;  // per side; < 0: the side lacks the op
  double limit_s;               // a memcpy of the tensor; 0 for ops other than allreduce and broadcast
};

std::vector<std::string> selected_ops(const std::string& list) {
  if (list.empty()) return comm_ops();
  std::vector<std::string> ops;
  std::stringstream in(list);
  for (std::string op; std::getline(in, op, ',');) {
    if (std::find(comm_ops().begin(), comm_ops().end(), op) == comm_ops().end()) {
      throw std::invalid_argument("no op '" + op + "'; the ops are allreduce, allreduce_avg, allreduce_bf16, "
                                  "reduce_scatter, allgather_into, allgather, broadcast");
    }
    ops.push_back(op);
  }
  return ops;
}

}  // namespace

const std::vector<std::string>& comm_ops() {
  static const std::vector<std::string> ops = {"allreduce",      "allreduce_avg", "allreduce_bf16", "reduce_scatter",
                                               "allgather_into", "allgather",     "broadcast"};
  return ops;
}

void add_comm_bench_options(CLI::App& app, CommBenchOptions& o) {
  app.add_option("--min-bytes", o.min_bytes, "smallest tensor")->check(CLI::Range(int64_t{64}, int64_t{1} << 34));
  app.add_option("--max-bytes", o.max_bytes, "largest tensor")->check(CLI::Range(int64_t{64}, int64_t{1} << 34));
  app.add_option("--seconds", o.seconds_per_point, "target seconds of one block of calls")
      ->check(CLI::Range(0.001, 60.0));
  app.add_option("--repeats", o.repeats, "blocks per point (median kept)")->check(CLI::Range(1, 100));
  app.add_option("--ops", o.ops, "comma-separated ops to measure (default: all)")
      ->check([](const std::string& list) {
        try {
          selected_ops(list);
          return std::string();
        } catch (const std::invalid_argument& e) {
          return std::string(e.what());
        }
      });
  app.add_option("--json", o.json, "where rank 0 writes the results");
}

int run_comm_table(const CommBenchOptions& o, const CommBenchRanks& ranks,
                   const std::vector<std::unique_ptr<CommSide>>& sides, const std::string& title) {
  const std::vector<std::string> ops = selected_ops(o.ops);
  const int n = ranks.size;
  std::vector<Row> rows;
  for (int64_t bytes = o.min_bytes; bytes <= o.max_bytes; bytes *= 4) {
    int64_t numel = bytes / 4;
    numel -= numel % n;
    std::vector<std::unique_ptr<Buffers>> buffers;
    for (size_t s = 0; s < sides.size(); ++s) buffers.push_back(std::make_unique<Buffers>(numel, n));
    std::map<int64_t, double> limits;  // by tensor bytes
    for (const auto& op : ops) {
      Row row{bytes, op, std::vector<double>(sides.size(), -1.0), 0};
      std::vector<std::function<void()>> calls(sides.size());
      std::vector<int> iters(sides.size(), 0);
      for (size_t s = 0; s < sides.size(); ++s) {
        if (!sides[s]->has(op)) continue;
        calls[s] = call_of(*sides[s], *buffers[s], op);
        calls[s]();  // warm: first-touch of the buffers, the implementation's own setup
        ranks.barrier();
        const auto start = Clock::now();
        calls[s]();
        const double once = std::max(seconds_since(start), 1e-6);
        iters[s] = static_cast<int>(ranks.max_over_ranks(
            static_cast<int64_t>(std::clamp(o.seconds_per_point / once, 1.0, 4000.0))));
      }
      // Blocks of calls, not single calls: a call that follows another
      // side's starts with the ranks as far apart as that one left them.
      std::vector<std::vector<double>> samples(sides.size());
      for (int r = 0; r < o.repeats; ++r) {
        for (size_t k = 0; k < sides.size(); ++k) {
          const size_t s = (k + static_cast<size_t>(r)) % sides.size();
          if (!calls[s]) continue;
          ranks.barrier();
          const auto start = Clock::now();
          for (int i = 0; i < iters[s]; ++i) calls[s]();
          samples[s].push_back(seconds_since(start) / iters[s]);
        }
      }
      for (size_t s = 0; s < sides.size(); ++s) {
        if (!samples[s].empty()) row.seconds[s] = median(samples[s]);
      }
      if (op.rfind("allreduce", 0) == 0 || op == "broadcast") {
        const int64_t tb = tensor_bytes(op, numel);
        if (!limits.count(tb)) {
          limits[tb] = memcpy_seconds(tb, std::max(1, iters[0]), o.repeats, ranks.barrier);
        }
        row.limit_s = limits[tb];
      }
      rows.push_back(row);
    }
  }
  if (ranks.rank != 0) return 0;

  std::printf("%s\n", title.c_str());
  std::printf("microseconds per call, median of %d blocks; ratio: the side's time / paisoar's (> 1: paisoar is "
              "faster); limit: a memcpy of the tensor on every rank at once\n", o.repeats);
  std::printf("%10s %-15s", "bytes", "op");
  for (const auto& side : sides) std::printf(" %11s", (side->name() + " us").substr(0, 11).c_str());
  for (size_t s = 1; s < sides.size(); ++s) std::printf(" %8s", ("/" + sides[s]->name()).substr(0, 8).c_str());
  std::printf(" %9s %7s\n", "limit us", "x limit");
  nlohmann::json out = {{"world_size", n}, {"libtorch", TORCH_VERSION}, {"title", title},
                        {"sides", nlohmann::json::array()}, {"rows", nlohmann::json::array()}};
  for (const auto& side : sides) out["sides"].push_back(side->name());
  for (const auto& r : rows) {
    std::printf("%10lld %-15s", static_cast<long long>(r.bytes), r.op.c_str());
    for (double s : r.seconds) {
      if (s < 0) std::printf(" %11s", "-");
      else std::printf(" %11.1f", s * 1e6);
    }
    for (size_t s = 1; s < sides.size(); ++s) {
      if (r.seconds[s] < 0 || r.seconds[0] < 0) std::printf(" %8s", "-");
      else std::printf(" %8.2f", r.seconds[s] / r.seconds[0]);
    }
    if (r.limit_s > 0 && r.seconds[0] > 0) std::printf(" %9.1f %7.2f", r.limit_s * 1e6, r.seconds[0] / r.limit_s);
    std::printf("\n");
    nlohmann::json seconds = nlohmann::json::object();
    for (size_t s = 0; s < sides.size(); ++s) {
      if (r.seconds[s] >= 0) seconds[sides[s]->name()] = r.seconds[s];
    }
    nlohmann::json row = {{"bytes", r.bytes}, {"op", r.op}, {"seconds", seconds}};
    if (r.limit_s > 0) row["memcpy_limit_s"] = r.limit_s;
    out["rows"].push_back(row);
  }
  std::ofstream(o.json) << out.dump(2) << "\n";
  std::printf("wrote %s\n", o.json.c_str());
  return 0;
}

}  // namespace paisoar::bench
