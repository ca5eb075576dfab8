// `paisoar bench comm`: bus bandwidth of paisoar's allreduce, reduce_scatter and
// allgather next to raw c10d Gloo on the same ranks in the same run, 4 KiB to
// 256 MiB. Runs of ours and the peer alternate per size to share the noise.
#include <torch/torch.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>

#include <nlohmann/json.hpp>

#include "apps/paisoar-core/commands.h"
#include "bench/measure_pair.h"
#include "paisoar/comm.h"
#include "src/comm/raw_gloo_peer.h"

namespace paisoar::app {
namespace {

using bench::measure_pair;

struct CommBenchOptions {
  int nproc = 2;
  int64_t min_bytes = 4 << 10;
  int64_t max_bytes = 256 << 20;
  double seconds_per_point = 0.3;  // target time per measurement
  int repeats = 5;                 // samples per (size, op, impl); the median is kept
  std::string json = "comm_bench.json";
};

using Clock = std::chrono::steady_clock;

struct Row {
  int64_t bytes;
  std::string op;
  double ours_s, raw_s;
  double ours_busbw, raw_busbw;  // GB/s
};

int run_comm_bench(const CommBenchOptions& o, int argc, char** argv) {
  relaunch_unless_launched(o.nproc, argc, argv);
  auto comm = comm::Communicator::from_env();
  const int rank = comm->rank(), n = comm->size();
  // The peer: a plain c10d Gloo group on the same store and transport.
  comm::RawGlooPeer raw(*comm);
  const auto info = comm::rank_info_from_env();
  auto barrier = [&] { comm->barrier().wait(); };

  std::vector<Row> rows;
  for (int64_t bytes = o.min_bytes; bytes <= o.max_bytes; bytes *= 4) {
    int64_t numel = bytes / 4;
    numel -= numel % n;
    auto ours_t = torch::ones({numel});
    auto raw_t = torch::ones({numel});
    // Calibrate iterations on our allreduce.
    auto t0 = Clock::now();
    comm->allreduce(ours_t).wait();
    double once = std::chrono::duration<double>(Clock::now() - t0).count();
    auto iters_t = torch::tensor({static_cast<int64_t>(std::clamp(o.seconds_per_point / std::max(once, 1e-6), 1.0, 2000.0))});
    comm->allreduce(iters_t, comm::ReduceOp::Max).wait();
    int iters = static_cast<int>(iters_t.item<int64_t>());

    auto raw_allreduce = [&] { raw.allreduce(raw_t); };
    auto ours_allreduce = [&] { comm->allreduce(ours_t).wait(); };
    auto [ar_ours, ar_raw] = measure_pair(iters, o.repeats, ours_allreduce, raw_allreduce, barrier);
    double algo = static_cast<double>(numel) * 4;
    rows.push_back({bytes, "allreduce", ar_ours, ar_raw, algo / ar_ours * 2 * (n - 1) / n / 1e9,
                    algo / ar_raw * 2 * (n - 1) / n / 1e9});

    // reduce_scatter: Gloo 1.13 has none; the peer is what a user would do, a full allreduce.
    auto shard = torch::empty({numel / n});
    auto ours_rs = [&] { comm->reduce_scatter(shard, ours_t).wait(); };
    auto [rs_ours, rs_peer] = measure_pair(iters, o.repeats, ours_rs, raw_allreduce, barrier);
    // Gloo 1.13 has no reduce_scatter: the peer is what a user does instead, a full
    // allreduce (its bus bandwidth by the allreduce convention).
    rows.push_back({bytes, "reduce_scatter", rs_ours, rs_peer, algo / rs_ours * (n - 1) / n / 1e9,
                    algo / rs_peer * 2 * (n - 1) / n / 1e9});

    // allgather: ours into one flat tensor; raw c10d into a list.
    auto gathered = torch::empty({numel});
    std::vector<at::Tensor> raw_out;
    for (int r = 0; r < n; ++r) raw_out.push_back(torch::empty({numel / n}));
    auto raw_shard = torch::ones({numel / n});
    auto ours_ag = [&] { comm->allgather_into(gathered, shard).wait(); };
    auto raw_ag = [&] { raw.allgather(raw_out, raw_shard); };
    auto [ag_ours, ag_raw] = measure_pair(iters, o.repeats, ours_ag, raw_ag, barrier);
    rows.push_back({bytes, "allgather", ag_ours, ag_raw, algo / ag_ours * (n - 1) / n / 1e9,
                    algo / ag_raw * (n - 1) / n / 1e9});
  }

  if (rank == 0) {
    std::printf("paisoar bench comm: %d ranks, Gloo over %s; bus bandwidth GB/s (nccl-tests "
                "convention), median of %d; reduce_scatter's peer is a raw allreduce (Gloo has "
                "no reduce_scatter)\n",
                n, info.master_addr.c_str(), o.repeats);
    std::printf("%10s %-15s %10s %10s %8s %10s\n", "bytes", "op", "paisoar", "raw gloo",
                "speedup", "rs/ar time");
    nlohmann::json out = {{"world_size", n}, {"rows", nlohmann::json::array()}};
    for (size_t i = 0; i < rows.size(); ++i) {
      const auto& r = rows[i];
      double speedup = r.raw_s / r.ours_s;  // > 1: paisoar is faster
      std::string rs_vs_ar = "";
      if (r.op == "reduce_scatter") {
        char buf[32];
        std::snprintf(buf, sizeof(buf), "%.2f", r.ours_s / rows[i - 1].ours_s);
        rs_vs_ar = buf;
      }
      std::printf("%10lld %-15s %10.3f %10.3f %8.2f %10s\n", static_cast<long long>(r.bytes),
                  r.op.c_str(), r.ours_busbw, r.raw_busbw, speedup, rs_vs_ar.c_str());
      out["rows"].push_back({{"bytes", r.bytes}, {"op", r.op}, {"paisoar_s", r.ours_s},
                             {"raw_gloo_s", r.raw_s}, {"paisoar_busbw_gbps", r.ours_busbw},
                             {"raw_gloo_busbw_gbps", r.raw_busbw}, {"speedup", speedup}});
    }
    std::ofstream(o.json) << out.dump(2) << "\n";
    std::printf("wrote %s\n", o.json.c_str());
  }
  return 0;
}

}  // namespace

Command add_bench_comm_command(CLI::App& bench) {
  auto o = std::make_shared<CommBenchOptions>();
  auto* cmd = bench.add_subcommand("comm", "collective bandwidth: paisoar vs raw c10d Gloo");
  cmd->add_option("--nproc", o->nproc, "ranks to start when not launched")->check(CLI::Range(2, 64));
  cmd->add_option("--min-bytes", o->min_bytes, "smallest tensor")->check(CLI::Range(int64_t{64}, int64_t{1} << 34));
  cmd->add_option("--max-bytes", o->max_bytes, "largest tensor")->check(CLI::Range(int64_t{64}, int64_t{1} << 34));
  cmd->add_option("--seconds", o->seconds_per_point, "target seconds per measurement");
  cmd->add_option("--repeats", o->repeats, "measurements per point (median kept)")->check(CLI::Range(1, 100));
  cmd->add_option("--json", o->json, "where rank 0 writes the results");
  return [o](int argc, char** argv) { return run_comm_bench(*o, argc, argv); };
}

}  // namespace paisoar::app
