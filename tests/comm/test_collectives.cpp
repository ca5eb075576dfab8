// Collectives against a reference computed locally from every rank's input,
// for several world sizes, dtypes and sizes, with ranks as threads.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include "tests/support/thread_ranks.h"

using paisoar::comm::Communicator;
using paisoar::comm::Backend;
using paisoar::comm::ReduceOp;
using paisoar::testing::run_ranks;

namespace {

// Rank r's input: values on a 0.25 grid, so sums of up to 4 ranks are exact in
// every dtype (bf16 included), plus a random part for float types checked with
// a tolerance. The same (rank, numel) always gives the same tensor.
torch::Tensor input_for(int rank, int64_t numel, torch::Dtype dtype, bool random = false) {
  auto grid = (torch::arange(numel, torch::kDouble).remainder(13) + rank) * 0.25;
  if (!torch::isFloatingType(dtype)) grid = torch::arange(numel, torch::kDouble).remainder(13) + rank * 7;
  if (random) {
    auto gen = at::detail::createCPUGenerator(1000 + rank);
    grid = grid + at::randn({numel}, gen, torch::kDouble);
  }
  return grid.to(dtype);
}

double tolerance(torch::Dtype dtype) {
  switch (dtype) {
    case torch::kHalf: return 2e-2;
    case torch::kBFloat16: return 5e-2;
    case torch::kFloat: return 1e-5;
    default: return 1e-12;
  }
}

void expect_close(const torch::Tensor& got, const torch::Tensor& want, double tol,
                  const std::string& what) {
  ASSERT_EQ(got.scalar_type(), want.scalar_type()) << what;
  ASSERT_EQ(got.sizes(), want.sizes()) << what;
  auto diff = (got.to(torch::kDouble) - want.to(torch::kDouble)).abs().max().item<double>();
  auto scale = std::max(1.0, want.to(torch::kDouble).abs().max().item<double>());
  EXPECT_LE(diff, tol * scale) << what;
}

torch::Tensor reference(int world, int64_t numel, torch::Dtype dtype, ReduceOp op, bool random) {
  std::vector<torch::Tensor> all;
  for (int r = 0; r < world; ++r) all.push_back(input_for(r, numel, dtype, random).to(torch::kDouble));
  auto stacked = torch::stack(all);
  torch::Tensor out;
  switch (op) {
    case ReduceOp::Sum: out = stacked.sum(0); break;
    case ReduceOp::Avg: out = stacked.sum(0) / world; break;
    case ReduceOp::Min: out = std::get<0>(stacked.min(0)); break;
    case ReduceOp::Max: out = std::get<0>(stacked.max(0)); break;
    case ReduceOp::Product: out = stacked.prod(0); break;
  }
  return out.to(dtype);
}

const std::vector<int64_t> kSizes = {1, 7, 1000, 65537};

class Collectives : public ::testing::TestWithParam<std::tuple<int, torch::Dtype, Backend>> {
 protected:
  int world() const { return std::get<0>(GetParam()); }
  torch::Dtype dtype() const { return std::get<1>(GetParam()); }
  paisoar::comm::CommOptions options() const { return paisoar::testing::test_options(std::get<2>(GetParam())); }
  bool floating() const { return torch::isFloatingType(dtype()); }
};

TEST_P(Collectives, AllreduceMatchesReference) {
  std::vector<ReduceOp> ops = {ReduceOp::Sum, ReduceOp::Max, ReduceOp::Min};
  if (floating()) ops.push_back(ReduceOp::Avg);
  run_ranks(world(), [&](int rank, std::shared_ptr<Communicator> comm) {
    for (bool random : {false, true}) {
      if (random && !floating()) continue;
      for (auto op : ops) {
        for (int64_t numel : kSizes) {
          auto t = input_for(rank, numel, dtype(), random);
          comm->allreduce(t, op).wait();
          auto want = reference(world(), numel, dtype(), op, random);
          double tol = random ? tolerance(dtype()) : 1e-12;
          if (op == ReduceOp::Avg) tol = std::max(tol, tolerance(dtype()));
          expect_close(t, want, tol,
                       std::string("allreduce ") + to_string(op) + " n=" + std::to_string(numel));
        }
      }
    }
  }, options());
}

TEST_P(Collectives, ReduceScatterMatchesReference) {
  std::vector<ReduceOp> ops = {ReduceOp::Sum, ReduceOp::Max, ReduceOp::Min, ReduceOp::Product};
  if (floating()) ops.push_back(ReduceOp::Avg);
  run_ranks(world(), [&](int rank, std::shared_ptr<Communicator> comm) {
    for (auto op : ops) {
      for (int64_t chunk : kSizes) {
        auto in = input_for(rank, chunk * world(), dtype());
        auto out = torch::full({chunk}, 99, dtype());
        comm->reduce_scatter(out, in, op).wait();
        auto want = reference(world(), chunk * world(), dtype(), op, false).narrow(0, rank * chunk, chunk);
        bool rounded = op == ReduceOp::Avg || op == ReduceOp::Product;
        expect_close(out, want, rounded ? tolerance(dtype()) : 1e-12,
                     std::string("reduce_scatter ") + to_string(op));
      }
    }
  }, options());
}

TEST_P(Collectives, AllgatherBroadcastAndSendRecvAreExact) {
  run_ranks(world(), [&](int rank, std::shared_ptr<Communicator> comm) {
    for (int64_t numel : kSizes) {
      auto mine = input_for(rank, numel, dtype(), floating());
      // Flat allgather.
      auto flat = torch::zeros({world() * numel}, dtype());
      comm->allgather_into(flat, mine).wait();
      // List allgather.
      std::vector<torch::Tensor> parts;
      for (int r = 0; r < world(); ++r) parts.push_back(torch::zeros({numel}, dtype()));
      comm->allgather(parts, mine).wait();
      for (int r = 0; r < world(); ++r) {
        auto want = input_for(r, numel, dtype(), floating());
        EXPECT_TRUE(torch::equal(flat.narrow(0, r * numel, numel), want)) << "allgather_into";
        EXPECT_TRUE(torch::equal(parts[r], want)) << "allgather";
      }
      // Broadcast from every root.
      for (int root = 0; root < world(); ++root) {
        auto t = input_for(rank, numel, dtype(), floating());
        comm->broadcast(t, root).wait();
        EXPECT_TRUE(torch::equal(t, input_for(root, numel, dtype(), floating()))) << "root " << root;
      }
      // A ring of send/recv.
      if (world() > 1) {
        int next = (rank + 1) % world(), prev = (rank + world() - 1) % world();
        auto got = torch::zeros({numel}, dtype());
        auto sent = comm->send(mine, next, 7);
        comm->recv(got, prev, 7).wait();
        sent.wait();
        EXPECT_TRUE(torch::equal(got, input_for(prev, numel, dtype(), floating()))) << "recv";
      }
    }
    comm->barrier().wait();
  }, options());
}

INSTANTIATE_TEST_SUITE_P(
    WorldsAndDtypes, Collectives,
    ::testing::Combine(::testing::Values(1, 2, 3, 4),
                       ::testing::Values(torch::kFloat, torch::kDouble, torch::kHalf,
                                         torch::kBFloat16, torch::kInt, torch::kLong),
                       ::testing::Values(Backend::Gloo, Backend::Threads, Backend::Shm)),
    [](const auto& info) {
      return "w" + std::to_string(std::get<0>(info.param)) + "_" +
             std::string(c10::toString(std::get<1>(info.param))) + "_" +
             paisoar::comm::to_string(std::get<2>(info.param));
    });

TEST(CollectivesMisc, CoalescedAllreduceOfMixedDtypes) {
  run_ranks(3, [](int rank, std::shared_ptr<Communicator> comm) {
    std::vector<torch::Tensor> ts = {input_for(rank, 10, torch::kFloat),
                                     input_for(rank, 5, torch::kBFloat16).view({5, 1}),
                                     input_for(rank, 1000, torch::kFloat).view({10, 100}),
                                     input_for(rank, 3, torch::kLong)};
    comm->allreduce_coalesced(ts, ReduceOp::Sum).wait();
    expect_close(ts[0], reference(3, 10, torch::kFloat, ReduceOp::Sum, false), 0, "fp32 a");
    expect_close(ts[1], reference(3, 5, torch::kBFloat16, ReduceOp::Sum, false).view({5, 1}), 0, "bf16");
    expect_close(ts[2], reference(3, 1000, torch::kFloat, ReduceOp::Sum, false).view({10, 100}), 0, "fp32 b");
    expect_close(ts[3], reference(3, 3, torch::kLong, ReduceOp::Sum, false), 0, "int64");
  }, paisoar::testing::test_options(Backend::Gloo));
}

// Chunks above the 4 MiB segment size travel as several messages and are
// reduced segment by segment; the result must not change at the seams.
TEST(CollectivesMisc, LargeChunksSpanSeveralSegments) {
  const int64_t chunk = 2'500'001;  // 10 MB of fp32: 3 segments, the last one short
  run_ranks(3, [&](int rank, std::shared_ptr<Communicator> comm) {
    for (auto dtype : {torch::kFloat, torch::kBFloat16}) {
      auto in = input_for(rank, 3 * chunk, dtype);
      auto out = torch::empty({chunk}, dtype);
      comm->reduce_scatter(out, in, ReduceOp::Sum).wait();
      auto want = reference(3, 3 * chunk, dtype, ReduceOp::Sum, false).narrow(0, rank * chunk, chunk);
      EXPECT_TRUE(torch::equal(out, want)) << c10::toString(dtype);
      auto gathered = torch::empty({3 * chunk}, dtype);
      comm->allgather_into(gathered, out).wait();
      EXPECT_TRUE(torch::equal(gathered, reference(3, 3 * chunk, dtype, ReduceOp::Sum, false)));
    }
  }, paisoar::testing::test_options(Backend::Gloo));
}

TEST(CollectivesMisc, NonContiguousTensorsAreWrittenInPlace) {
  run_ranks(2, [](int rank, std::shared_ptr<Communicator> comm) {
    for (auto op : {ReduceOp::Sum, ReduceOp::Avg}) {
      auto base = input_for(rank, 12, torch::kFloat).view({3, 4});
      auto column_major = base.t();  // non-contiguous view
      comm->allreduce(column_major, op).wait();
      EXPECT_TRUE(torch::allclose(base, reference(2, 12, torch::kFloat, op, false).view({3, 4})))
          << to_string(op);
    }
    auto target = input_for(rank, 12, torch::kFloat).view({4, 3}).t();  // non-contiguous output
    comm->broadcast(target, 1).wait();
    EXPECT_TRUE(torch::equal(target, input_for(1, 12, torch::kFloat).view({4, 3}).t()));
    auto out = torch::zeros({2, 3}).t();
    comm->reduce_scatter(out, input_for(rank, 12, torch::kFloat).view({2, 6}), ReduceOp::Avg).wait();
    EXPECT_TRUE(torch::allclose(out.contiguous().view(-1),
                                reference(2, 12, torch::kFloat, ReduceOp::Avg, false).narrow(0, rank * 6, 6)));
  }, paisoar::testing::test_options(Backend::Gloo));
}

// ZeRO reduces a flat gradient buffer into this rank's own chunk of it.
TEST(CollectivesMisc, InPlaceReduceScatterAndAllgather) {
  const int64_t chunk = 1001;
  run_ranks(3, [&](int rank, std::shared_ptr<Communicator> comm) {
    for (auto dtype : {torch::kFloat, torch::kBFloat16, torch::kLong}) {
      auto flat = input_for(rank, 3 * chunk, dtype);
      auto mine = flat.narrow(0, rank * chunk, chunk);
      comm->reduce_scatter(mine, flat, ReduceOp::Sum).wait();
      auto want = reference(3, 3 * chunk, dtype, ReduceOp::Sum, false);
      EXPECT_TRUE(torch::equal(mine, want.narrow(0, rank * chunk, chunk))) << c10::toString(dtype);
      comm->allgather_into(flat, mine).wait();
      EXPECT_TRUE(torch::equal(flat, want)) << c10::toString(dtype);
    }
  }, paisoar::testing::test_options(Backend::Gloo));
}

TEST(CollectivesMisc, Int16AndInt8Allreduce) {
  run_ranks(3, [](int rank, std::shared_ptr<Communicator> comm) {
    for (auto dtype : {torch::kShort, torch::kChar, torch::kByte}) {
      auto t = input_for(rank, 100, dtype);
      comm->allreduce(t, ReduceOp::Sum).wait();
      EXPECT_TRUE(torch::equal(t, reference(3, 100, dtype, ReduceOp::Sum, false))) << c10::toString(dtype);
    }
  }, paisoar::testing::test_options(Backend::Gloo));
}

// A rank that drops a Work without waiting must not leave its peers waiting
// for messages that were cancelled, nor confuse the next collective.
TEST(CollectivesMisc, DroppedWorkStillCompletesForPeers) {
  const int64_t chunk = 1'500'000;  // several segments
  run_ranks(2, [&](int rank, std::shared_ptr<Communicator> comm) {
    auto in = input_for(rank, 2 * chunk, torch::kFloat);
    auto out = torch::empty({chunk});
    {
      auto work = comm->reduce_scatter(out, in, ReduceOp::Sum);
      if (rank == 0) work.wait();  // rank 1 drops it
    }
    if (rank == 0) {
      EXPECT_TRUE(torch::equal(out, reference(2, 2 * chunk, torch::kFloat, ReduceOp::Sum, false)
                                        .narrow(0, 0, chunk)));
    }
    auto next_in = input_for(rank + 5, 2 * chunk, torch::kFloat);
    comm->reduce_scatter(out, next_in, ReduceOp::Max).wait();
    auto want = torch::maximum(input_for(5, 2 * chunk, torch::kFloat), input_for(6, 2 * chunk, torch::kFloat));
    EXPECT_TRUE(torch::equal(out, want.narrow(0, rank * chunk, chunk)));
  }, paisoar::testing::test_options(Backend::Gloo));
}

TEST(CollectivesMisc, ManyOutstandingWorksCompleteInIssueOrder) {
  run_ranks(2, [](int rank, std::shared_ptr<Communicator> comm) {
    std::vector<torch::Tensor> ts;
    std::vector<paisoar::comm::Work> works;
    for (int i = 0; i < 16; ++i) {
      ts.push_back(torch::full({1000 + i}, static_cast<float>(rank + i)));
      works.push_back(comm->allreduce(ts.back(), ReduceOp::Avg));
    }
    for (int i = 15; i >= 0; --i) works[i].wait();  // waiting out of order is fine
    for (int i = 0; i < 16; ++i) EXPECT_FLOAT_EQ(ts[i][0].item<float>(), 0.5f + i);
  }, paisoar::testing::test_options(Backend::Gloo));
}

}  // namespace

// Ranks that issued different numbers of sends and recvs (a pipeline's middle
// stage issues twice its neighbours') still agree on the pairwise exchanges'
// tags: reduce_scatter and allgather_into afterwards complete (they hung when
// send/recv advanced the collective counter that the tags carry).
TEST(CollectivesMisc, UnevenPointToPointDoesNotDesynchroniseLaterCollectives) {
  run_ranks(3, [](int rank, std::shared_ptr<Communicator> comm) {
    auto t = torch::full({4}, static_cast<float>(rank));
    if (rank == 0) comm->send(t, 1).wait();
    if (rank == 1) {
      comm->recv(t, 0).wait();
      comm->send(t, 2).wait();
    }
    if (rank == 2) comm->recv(t, 1).wait();
    EXPECT_TRUE(torch::equal(t, torch::zeros({4})));
    auto all = torch::empty({3});
    comm->allgather_into(all, torch::full({1}, static_cast<float>(rank))).wait();
    EXPECT_TRUE(torch::equal(all, torch::arange(3, torch::kFloat)));
    auto out = torch::empty({2});
    comm->reduce_scatter(out, torch::ones({6}), ReduceOp::Sum).wait();
    EXPECT_TRUE(torch::equal(out, torch::full({2}, 3.0f)));
  }, paisoar::testing::test_options(Backend::Gloo));
}
