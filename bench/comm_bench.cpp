// `paisoar bench comm`: bus bandwidth of paisoar's allreduce, reduce_scatter and
// allgather next to raw c10d Gloo on the same ranks in the same run, 4 KiB to
// 256 MiB. Blocks of calls of ours and of the peer alternate per size to
// share the noise.
// paisoar runs on what Backend::Auto chose (shared memory for ranks on one
// host; PAISOAR_COMM_BACKEND=gloo forces Gloo). Each size also measures this
// machine's limit: a memcpy of the tensor on every rank at once. An
// allreduce cannot take less: every rank must read the others' data and
// write the whole result into its tensor, at least a copy's worth of traffic.
#include <torch/torch.h>
#include <torch/version.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <functional>
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

struct CommRow {
  int64_t bytes;
  std::string op;
  double ours_s, raw_s;
  double ours_busbw, raw_busbw;  // GB/s
  double limit_s;                // allreduce rows: a memcpy of the tensor, every rank at once; else 0
};

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
    samples.push_back(std::chrono::duration<double>(Clock::now() - start).count() / iters);
  }
  return bench::median(std::move(samples));
}

int run_comm_bench(const CommBenchOptions& o, int argc, char** argv) {
  relaunch_unless_launched(o.nproc, argc, argv);
  auto comm = comm::Communicator::from_env();
  const int rank = comm->rank(), n = comm->size();
  // The peer: a plain c10d Gloo group on the same store and transport.
  comm::RawGlooPeer raw(*comm);
  const auto info = comm::rank_info_from_env();
  auto barrier = [&] { comm->barrier().wait(); };

  std::vector<CommRow> rows;
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

    const double algo = static_cast<double>(numel) * 4;
    const double ar_factor = 2.0 * (n - 1) / n, gather_factor = static_cast<double>(n - 1) / n;
    double limit_s = 0;  // set for the allreduce rows
    // Blocks of `iters` calls alternate, not single calls: a call that
    // follows the other implementation's starts with the ranks as far apart
    // as that one left them, and per-call alternation charged the faster
    // implementation with the slower one's skew on every call.
    auto add = [&](const char* op, double bytes_moved, double factor, auto ours, auto peer) {
      auto block = [&](auto& call) {
        return [&] {
          for (int i = 0; i < iters; ++i) call();
        };
      };
      auto [block_ours, block_raw] = measure_pair(1, o.repeats, block(ours), block(peer), barrier);
      const double t_ours = block_ours / iters, t_raw = block_raw / iters;
      rows.push_back({bytes, op, t_ours, t_raw, bytes_moved / t_ours * factor / 1e9,
                      bytes_moved / t_raw * factor / 1e9, limit_s});
    };
    limit_s = memcpy_seconds(numel * 4, iters, o.repeats, barrier);
    add("allreduce", algo, ar_factor, [&] { comm->allreduce(ours_t).wait(); },
        [&] { raw.allreduce(raw_t); });
    // AVG: ours is Gloo's SUM and one division in wait(); the peer Gloo 2.x's own AVG.
    add("allreduce_avg", algo, ar_factor, [&] { comm->allreduce(ours_t, comm::ReduceOp::Avg).wait(); },
        [&] { raw.allreduce(raw_t, /*average=*/true); });
    // bf16: ours sums in fp32 (one rounding at the end, twice the bytes on the
    // wire); the peer Gloo 2.x's native bf16 sum (half the bytes, a rounding per hop).
    auto ours_bf = torch::ones({numel}, torch::kBFloat16), raw_bf = torch::ones({numel}, torch::kBFloat16);
    limit_s = memcpy_seconds(numel * 2, iters, o.repeats, barrier);
    add("allreduce_bf16", algo / 2, ar_factor, [&] { comm->allreduce(ours_bf).wait(); },
        [&] { raw.allreduce(raw_bf); });
    limit_s = 0;
    // reduce_scatter: ours a pairwise exchange reduced as segments arrive; the
    // peer Gloo 2.x's _reduce_scatter_base (an allreduce, then a copy).
    auto shard = torch::empty({numel / n});
    auto raw_shard_out = torch::empty({numel / n});
    add("reduce_scatter", algo, gather_factor, [&] { comm->reduce_scatter(shard, ours_t).wait(); },
        [&] { raw.reduce_scatter(raw_shard_out, raw_t); });
    // allgather into one flat tensor: ours a pairwise exchange; the peer Gloo 2.x's _allgather_base.
    auto gathered = torch::empty({numel});
    auto raw_gathered = torch::empty({numel});
    auto raw_shard = torch::ones({numel / n});
    add("allgather_into", algo, gather_factor, [&] { comm->allgather_into(gathered, shard).wait(); },
        [&] { raw.allgather_into(raw_gathered, raw_shard); });
    // allgather into a list: both through Gloo's allgather.
    std::vector<at::Tensor> ours_list, raw_list;
    for (int r = 0; r < n; ++r) {
      ours_list.push_back(torch::empty({numel / n}));
      raw_list.push_back(torch::empty({numel / n}));
    }
    add("allgather", algo, gather_factor, [&] { comm->allgather(ours_list, shard).wait(); },
        [&] { raw.allgather(raw_list, raw_shard); });
  }

  if (rank == 0) {
    const std::string backend = comm->backend_name();
    std::printf("paisoar bench comm: %d ranks; paisoar on %s, the peer c10d's Gloo called directly over %s, "
                "with its own AVG, bf16, reduce-scatter and allgather-into-tensor (LibTorch %s); "
                "bus bandwidth GB/s (nccl-tests convention) and microseconds, median of %d; limit: a memcpy "
                "of the tensor on every rank at once\n",
                n, backend.c_str(), info.master_addr.c_str(), TORCH_VERSION, o.repeats);
    std::printf("%10s %-15s %9s %9s %11s %11s %8s %11s %8s\n", "bytes", "op", "paisoar", "raw gloo", "paisoar us",
                "gloo us", "speedup", "limit us", "x limit");
    nlohmann::json out = {{"world_size", n}, {"libtorch", TORCH_VERSION}, {"paisoar_backend", backend},
                          {"rows", nlohmann::json::array()}};
    for (const auto& r : rows) {
      const double speedup = r.raw_s / r.ours_s;  // > 1: paisoar is faster
      std::printf("%10lld %-15s %9.3f %9.3f %11.1f %11.1f %8.2f", static_cast<long long>(r.bytes), r.op.c_str(),
                  r.ours_busbw, r.raw_busbw, r.ours_s * 1e6, r.raw_s * 1e6, speedup);
      if (r.limit_s > 0) std::printf(" %11.1f %8.2f", r.limit_s * 1e6, r.ours_s / r.limit_s);
      std::printf("\n");
      nlohmann::json row = {{"bytes", r.bytes}, {"op", r.op}, {"paisoar_s", r.ours_s},
                            {"raw_gloo_s", r.raw_s}, {"paisoar_busbw_gbps", r.ours_busbw},
                            {"raw_gloo_busbw_gbps", r.raw_busbw}, {"speedup", speedup}};
      if (r.limit_s > 0) row["memcpy_limit_s"] = r.limit_s;
      out["rows"].push_back(row);
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
