// A rank program for the shared-memory tests in separate processes (run by
// launch_shm_test.cpp under `paisoar launch`).
//   shm_process_check collectives: every collective, dtype and shape on a
//     Backend::Shm group and on a Gloo group of the same ranks, compared
//     (exact for integers, to each float type's rounding otherwise),
//     synchronous and as interleaved asynchronous calls. Prints
//     "rank R (pid P): N checks on paisoar-shm match gloo" or "MISMATCH ..." (exit 1).
//   shm_process_check kill: 2 ranks; rank 1 SIGKILLs itself in the middle of
//     a 64 MiB allreduce; rank 0 prints "rank 0 (pid P) caught after S s: <cause>:
//     <message>" (it ignores SIGTERM, so the launcher's stop lets it finish).
//   shm_process_check auto: the world under Backend::Auto; prints "rank R
//     (pid P) on <backend>: sum S" after an allreduce of rank+1.
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <exception>
#include <string>
#include <thread>
#include <vector>

#include "paisoar/comm/communicator.h"

namespace {

using paisoar::comm::Backend;
using paisoar::comm::CommError;
using paisoar::comm::Communicator;
using paisoar::comm::ReduceOp;
using paisoar::comm::Work;

std::shared_ptr<Communicator> group(Backend backend) {
  paisoar::comm::CommOptions options;
  options.backend = backend;
  options.timeout = std::chrono::seconds(30);
  return Communicator::from_env(options);
}

struct Checker {
  int rank;
  int checks = 0;
  void same(const torch::Tensor& shm, const torch::Tensor& gloo, const std::string& what) {
    ++checks;
    bool ok = shm.sizes() == gloo.sizes() && shm.scalar_type() == gloo.scalar_type();
    if (ok && shm.numel() > 0) {
      if (at::isFloatingType(shm.scalar_type())) {
        const double tol = shm.scalar_type() == torch::kFloat || shm.scalar_type() == torch::kDouble ? 1e-5 : 2e-2;
        ok = torch::allclose(shm.to(torch::kDouble), gloo.to(torch::kDouble), tol, tol);
      } else {
        ok = torch::equal(shm, gloo);
      }
    }
    if (!ok) {
      std::printf("MISMATCH rank %d: %s\n", rank, what.c_str());
      std::fflush(stdout);
      std::exit(1);
    }
  }
};

// Rank-dependent values every dtype holds exactly (small integers).
torch::Tensor input(int64_t numel, torch::ScalarType dtype, int rank, bool strided) {
  auto values = torch::arange(numel, torch::kLong).remainder(5).add(rank + 1).to(dtype);
  if (!strided || numel < 2) return values;
  // Same values, not contiguous: every other element of a buffer twice as long.
  auto wide = torch::zeros({numel * 2}, dtype);
  wide.slice(0, 0, numel * 2, 2).copy_(values);
  return wide.slice(0, 0, numel * 2, 2);
}

int check_collectives() {
  auto shm = group(Backend::Shm);
  auto gloo = group(Backend::Gloo);
  const int rank = shm->rank(), n = shm->size();
  if (shm->backend_name() != "paisoar-shm") {
    std::printf("MISMATCH rank %d: the shm group runs on %s\n", rank, shm->backend_name().c_str());
    return 1;
  }
  Checker check{rank};
  const std::vector<torch::ScalarType> dtypes{torch::kFloat, torch::kDouble, torch::kHalf, torch::kBFloat16,
                                              torch::kInt, torch::kLong, torch::kByte};
  // 0, 1, odd, and more than a 1 MiB slot piece for every dtype.
  const std::vector<int64_t> sizes{0, 1, 7, 3 * 65536 + 5, 600011};
  for (auto dtype : dtypes) {
    for (int64_t numel : sizes) {
      for (bool strided : {false, true}) {
        const std::string what = std::string(c10::toString(dtype)) + "[" + std::to_string(numel) + "]" +
                                 (strided ? " strided" : "");
        std::vector<ReduceOp> ops{ReduceOp::Sum, ReduceOp::Min, ReduceOp::Max};
        if (at::isFloatingType(dtype)) ops.push_back(ReduceOp::Avg);
        if (numel <= 7) ops.push_back(ReduceOp::Product);
        for (ReduceOp op : ops) {
          auto a = input(numel, dtype, rank, strided), b = input(numel, dtype, rank, strided);
          shm->allreduce(a, op).wait();
          gloo->allreduce(b, op).wait();
          check.same(a, b, "allreduce " + std::string(paisoar::comm::to_string(op)) + " " + what);
        }
        auto a = input(numel, dtype, rank, strided), b = input(numel, dtype, rank, strided);
        shm->broadcast(a, n - 1).wait();
        gloo->broadcast(b, n - 1).wait();
        check.same(a, b, "broadcast " + what);

        std::vector<torch::Tensor> la, lb;
        for (int r = 0; r < n; ++r) {
          la.push_back(torch::full({numel}, -1, dtype));
          lb.push_back(torch::full({numel}, -1, dtype));
        }
        shm->allgather(la, input(numel, dtype, rank, strided)).wait();
        gloo->allgather(lb, input(numel, dtype, rank, strided)).wait();
        for (int r = 0; r < n; ++r) check.same(la[r], lb[r], "allgather part " + std::to_string(r) + " " + what);

        auto fa = torch::empty({numel * n}, dtype), fb = torch::empty({numel * n}, dtype);
        shm->allgather_into(fa, input(numel, dtype, rank, strided)).wait();
        gloo->allgather_into(fb, input(numel, dtype, rank, strided)).wait();
        check.same(fa, fb, "allgather_into " + what);

        auto whole = input(numel * n, dtype, rank, strided);
        auto sa = torch::empty({numel}, dtype), sb = torch::empty({numel}, dtype);
        shm->reduce_scatter(sa, whole).wait();
        gloo->reduce_scatter(sb, whole).wait();
        check.same(sa, sb, "reduce_scatter " + what);

        if (n > 1) {  // a ring: to the next rank, from the previous
          auto ra = torch::full({numel}, -1, dtype), rb = torch::full({numel}, -1, dtype);
          Work sent = shm->send(input(numel, dtype, rank, strided), (rank + 1) % n, 5);
          shm->recv(ra, (rank + n - 1) % n, 5).wait();
          sent.wait();
          Work sent_gloo = gloo->send(input(numel, dtype, rank, strided), (rank + 1) % n, 5);
          gloo->recv(rb, (rank + n - 1) % n, 5).wait();
          sent_gloo.wait();
          check.same(ra, rb, "send/recv ring " + what);
        }
      }
    }
  }
  // Interleaved asynchronous calls complete in issue order with the same results.
  std::vector<torch::Tensor> outs_shm, outs_gloo;
  std::vector<Work> works;
  for (int i = 0; i < 12; ++i) {
    const int64_t numel = i % 3 == 0 ? 400009 : 17 + i;  // large ones go through the lane, small ones not
    outs_shm.push_back(input(numel, torch::kFloat, rank + i, false));
    outs_gloo.push_back(input(numel, torch::kFloat, rank + i, false));
    if (i % 2 == 0) works.push_back(shm->allreduce(outs_shm.back()));
    else works.push_back(shm->broadcast(outs_shm.back(), i % n));
  }
  shm->barrier().wait();
  for (auto& w : works) w.wait();
  for (int i = 0; i < 12; ++i) {
    if (i % 2 == 0) gloo->allreduce(outs_gloo[i]).wait();
    else gloo->broadcast(outs_gloo[i], i % n).wait();
    check.same(outs_shm[i], outs_gloo[i], "interleaved async call " + std::to_string(i));
  }
  shm->barrier().wait();
  std::printf("rank %d (pid %d): %d checks on paisoar-shm match gloo\n", rank, static_cast<int>(::getpid()),
              check.checks);
  return 0;
}

// Backend::Auto as a launched job gets it; prints the backend and a sum.
int check_auto() {
  auto comm = Communicator::from_env();
  auto t = torch::full({1000}, static_cast<float>(comm->rank() + 1));
  comm->allreduce(t).wait();
  std::printf("rank %d (pid %d) on %s: sum %g\n", comm->rank(), static_cast<int>(::getpid()),
              comm->backend_name().c_str(), t[0].item<float>());
  return 0;
}

int check_kill() {
  auto shm = group(Backend::Shm);
  const int rank = shm->rank();
  if (shm->size() != 2) {
    std::fprintf(stderr, "shm_process_check kill: run it on 2 ranks\n");
    return 2;
  }
  if (rank == 0) ::signal(SIGTERM, SIG_IGN);  // the launcher stops the survivors: finish first
  shm->barrier().wait();
  auto big = torch::ones({16 << 20});  // 64 MiB: 64 pieces through the slots
  if (rank == 1) {
    Work work = shm->allreduce(big);
    std::this_thread::sleep_for(std::chrono::milliseconds(1));  // some of its 64 pieces in, not all
    ::raise(SIGKILL);
  }
  const auto start = std::chrono::steady_clock::now();
  try {
    shm->allreduce(big).wait();
    std::printf("rank 0: the allreduce completed without rank 1\n");
    return 1;
  } catch (const CommError& e) {
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    std::printf("rank 0 (pid %d) caught after %.1f s: %s: %s\n", static_cast<int>(::getpid()), s,
                e.cause() == CommError::Cause::PeerDied ? "PeerDied" : "other", e.what());
  }
  std::fflush(stdout);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  const std::string mode = argc == 2 ? argv[1] : "";
  try {
    if (mode == "collectives") return check_collectives();
    if (mode == "kill") return check_kill();
    if (mode == "auto") return check_auto();
  } catch (const std::exception& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 1;
  }
  std::fprintf(stderr, "usage: shm_process_check collectives|kill|auto\n");
  return 2;
}
