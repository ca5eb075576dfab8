// `paisoar demo`: the main job until training lands. Every rank joins the group
// from the environment, runs allreduce (fp32 and bf16), reduce-scatter and
// allgather on known inputs, checks the results and reports the time taken.
#include <torch/torch.h>

#include <chrono>
#include <cstdio>

#include "apps/paisoar-core/commands.h"
#include "paisoar/comm.h"

namespace paisoar::app {
namespace {

struct DemoOptions {
  int nproc = 2;              // ranks when started without a launcher
  int64_t numel = 1 << 20;    // elements per tensor
  int iters = 10;
};

double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

// Runs `op` `iters` times and returns mean seconds per call.
template <typename Op>
double time_it(int iters, Op&& op) {
  auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < iters; ++i) op();
  return seconds_since(start) / iters;
}

int run_demo(const DemoOptions& o, int argc, char** argv) {
  relaunch_unless_launched(o.nproc, argc, argv);
  auto comm = comm::Communicator::from_env();
  const int rank = comm->rank(), world = comm->size();
  if (o.numel < world) {
    throw std::invalid_argument("--numel " + std::to_string(o.numel) + " is below the " +
                                std::to_string(world) + " ranks: give at least one element per rank");
  }
  const double expected = world * (world + 1) / 2.0;  // sum of rank+1
  bool ok = true;
  auto check = [&](const char* what, const torch::Tensor& got, double want) {
    double err = (got.to(torch::kDouble) - want).abs().max().item<double>();
    if (err > 1e-3 * std::max(1.0, std::abs(want))) {
      std::printf("rank %d: %s is wrong: max error %g (expected %g)\n", rank, what, err, want);
      ok = false;
    }
  };

  auto t = torch::empty({o.numel});
  double ar = time_it(o.iters, [&] {
    t.fill_(rank + 1);
    comm->allreduce(t).wait();
  });
  check("allreduce(sum, fp32)", t, expected);

  auto b = torch::empty({o.numel}, torch::kBFloat16);
  double ar_bf16 = time_it(o.iters, [&] {
    b.fill_(rank + 1);
    comm->allreduce(b, comm::ReduceOp::Avg).wait();
  });
  check("allreduce(avg, bf16)", b, expected / world);

  int64_t chunk = o.numel / world;
  auto in = torch::empty({chunk * world});
  auto shard = torch::empty({chunk});
  double rs = time_it(o.iters, [&] {
    in.fill_(rank + 1);
    comm->reduce_scatter(shard, in).wait();
  });
  check("reduce_scatter(sum)", shard, expected);

  auto gathered = torch::empty({chunk * world});
  double ag = time_it(o.iters, [&] { comm->allgather_into(gathered, shard).wait(); });
  check("allgather", gathered, expected);

  comm->barrier().wait();
  double mb = o.numel * 4 / 1e6;
  std::printf("rank %d/%d: %s  allreduce fp32 %.2f ms, bf16 avg %.2f ms, reduce_scatter %.2f ms, "
              "allgather %.2f ms (%.1f MB tensors)\n",
              rank, world, ok ? "all results correct" : "WRONG RESULTS", ar * 1e3, ar_bf16 * 1e3,
              rs * 1e3, ag * 1e3, mb);
  return ok ? 0 : 1;
}

}  // namespace

Command add_demo_command(CLI::App& app) {
  auto options = std::make_shared<DemoOptions>();
  auto* cmd = app.add_subcommand("demo", "distributed collectives check across the launched ranks "
                                         "(starts 2 ranks itself when run without `paisoar launch`)");
  cmd->add_option("--nproc", options->nproc, "ranks to start when not launched")->check(CLI::Range(1, 64));
  cmd->add_option("--numel", options->numel, "elements per tensor")->check(CLI::Range(int64_t{1}, int64_t{1} << 30));
  cmd->add_option("--iters", options->iters, "repetitions of each collective")->check(CLI::Range(1, 100000));
  return [options](int argc, char** argv) { return run_demo(*options, argc, argv); };
}

}  // namespace paisoar::app
