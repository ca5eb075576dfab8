// The shared-memory backend's fast paths against ATen: reduce_rows (every
// dtype, op, rank count and block boundary), the allreduce's one- and
// two-phase paths and reduce_scatter at every size boundary on 2, 3 and 4
// ranks (bit for bit against the rank-order fold in the accumulator type),
// allgather (in place too) and broadcast across the same boundaries,
// and collectives that run on the caller's thread: one nobody waits for
// still completes, and several issued before one wait run in order.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <chrono>
#include <thread>

#include "src/comm/shm_reduce.h"
#include "tests/support/thread_ranks.h"

using paisoar::comm::Backend;
using paisoar::comm::Communicator;
using paisoar::comm::ReduceOp;
using paisoar::testing::run_ranks;
using RedOp = ::c10d::ReduceOp::RedOpType;

namespace shm_reductions_test {

bool low_precision(at::ScalarType t) { return t == at::kHalf || t == at::kBFloat16; }

// The rank-order fold the backend promises: in fp32 for fp16/bf16, AVG
// divided before the one rounding.
at::Tensor fold(const std::vector<at::Tensor>& rows, RedOp op) {
  const auto dtype = rows[0].scalar_type();
  auto lift = [&](const at::Tensor& t) { return low_precision(dtype) ? t.to(at::kFloat) : t; };
  at::Tensor acc = lift(rows[0]).clone();
  for (size_t k = 1; k < rows.size(); ++k) {
    const at::Tensor v = lift(rows[k]);
    switch (op) {
      case RedOp::SUM: case RedOp::AVG: acc = acc + v; break;
      case RedOp::PRODUCT: acc = acc * v; break;
      case RedOp::MIN: acc = dtype == at::kBool ? at::logical_and(acc, v) : at::minimum(acc, v); break;
      case RedOp::MAX: acc = dtype == at::kBool ? at::logical_or(acc, v) : at::maximum(acc, v); break;
      case RedOp::BAND: acc = at::bitwise_and(acc, v); break;
      case RedOp::BOR: acc = at::bitwise_or(acc, v); break;
      case RedOp::BXOR: acc = at::bitwise_xor(acc, v); break;
      default: ADD_FAILURE() << "op " << static_cast<int>(op);
    }
  }
  if (op == RedOp::AVG) acc = acc / static_cast<double>(rows.size());
  return acc.to(dtype);
}

at::Tensor sample(at::ScalarType dtype, int64_t count, int64_t seed) {
  auto gen = at::make_generator<at::CPUGeneratorImpl>(seed);
  if (dtype == at::kBool) return at::randint(0, 2, {count}, gen, at::kLong).to(at::kBool);
  if (at::isIntegralType(dtype, false)) return at::randint(-9, 10, {count}, gen, at::kLong).to(dtype);
  return (at::randn({count}, gen, at::kDouble) * 3).to(dtype);
}

std::vector<RedOp> ops_for(at::ScalarType dtype) {
  if (dtype == at::kBool) return {RedOp::MIN, RedOp::MAX, RedOp::BAND, RedOp::BOR, RedOp::BXOR};
  if (at::isIntegralType(dtype, false)) {
    return {RedOp::SUM, RedOp::PRODUCT, RedOp::MIN, RedOp::MAX, RedOp::BAND, RedOp::BOR, RedOp::BXOR};
  }
  return {RedOp::SUM, RedOp::AVG, RedOp::PRODUCT, RedOp::MIN, RedOp::MAX};
}

const std::vector<at::ScalarType> kDtypes = {at::kFloat, at::kDouble, at::kHalf, at::kBFloat16, at::kChar,
                                             at::kByte,  at::kShort,  at::kInt,  at::kLong,     at::kBool};

TEST(ShmReduce, EveryDtypeOpAndRankCountMatchesTheRankOrderFold) {
  for (auto dtype : kDtypes) {
    for (RedOp op : ops_for(dtype)) {
      for (int n = 1; n <= 4; ++n) {
        for (int64_t count : {int64_t{1}, int64_t{511}, int64_t{512}, int64_t{513}, int64_t{1500}}) {
          std::vector<at::Tensor> rows;
          std::vector<const void*> ptrs;
          for (int k = 0; k < n; ++k) {
            rows.push_back(sample(dtype, count, 100 * k + count));
            ptrs.push_back(rows.back().data_ptr());
          }
          at::Tensor out = at::empty({count}, at::TensorOptions().dtype(dtype));
          paisoar::comm::detail::reduce_rows(out.data_ptr(), ptrs.data(), n, count, dtype, op);
          const at::Tensor want = fold(rows, op);
          ASSERT_TRUE(at::equal(out, want)) << dtype << " op " << static_cast<int>(op) << " n " << n << " count "
                                            << count;
          // In place in the first row, as the backend's two-phase path reduces into its own slot.
          at::Tensor first = rows[0].clone();
          ptrs[0] = first.data_ptr();
          paisoar::comm::detail::reduce_rows(first.data_ptr(), ptrs.data(), n, count, dtype, op);
          ASSERT_TRUE(at::equal(first, want)) << dtype << " in place, op " << static_cast<int>(op);
        }
      }
    }
  }
}

TEST(ShmReduce, AStreamedCopyEqualsMemcpyAtEveryLengthAndAlignment) {
  std::vector<uint8_t> src(3 << 16), dst(src.size() + 64);
  for (size_t i = 0; i < src.size(); ++i) src[i] = static_cast<uint8_t>(i * 131 + 7);
  for (size_t offset : {0, 1, 15, 16, 33}) {
    for (size_t bytes : {size_t{0}, size_t{5}, size_t{4095}, size_t{4096}, size_t{4097}, size_t{65536 + 63},
                         src.size() - 64}) {
      std::fill(dst.begin(), dst.end(), uint8_t{0xEE});
      paisoar::comm::detail::copy_to_shared(dst.data() + offset, src.data() + 3, bytes);
      ASSERT_TRUE(std::equal(src.begin() + 3, src.begin() + 3 + bytes, dst.begin() + offset))
          << "offset " << offset << " bytes " << bytes;
      ASSERT_EQ(dst[offset + bytes], 0xEE) << "wrote past the end: offset " << offset << " bytes " << bytes;
      if (offset > 0) ASSERT_EQ(dst[offset - 1], 0xEE);
    }
  }
}

TEST(ShmReduce, NanWinsMinAndMaxAsInATen) {
  at::Tensor a = torch::tensor({1.f, NAN, 3.f}), b = torch::tensor({NAN, 2.f, -1.f});
  const void* rows[] = {a.data_ptr(), b.data_ptr()};
  for (RedOp op : {RedOp::MIN, RedOp::MAX}) {
    at::Tensor out = at::empty({3});
    paisoar::comm::detail::reduce_rows(out.data_ptr(), rows, 2, 3, at::kFloat, op);
    const at::Tensor want = op == RedOp::MIN ? at::minimum(a, b) : at::maximum(a, b);
    EXPECT_TRUE(at::equal(out.isnan(), want.isnan()));
    EXPECT_EQ(out[2].item<float>(), want[2].item<float>());
  }
}

// Elements of `dtype` at which the backend's paths change: the one-phase
// limit for more than 2 ranks (64 KiB) and the slot (1 MiB), each -1/+1,
// and more than two slots with a tail.
std::vector<int64_t> boundary_counts(at::ScalarType dtype) {
  const int64_t e = c10::elementSize(dtype);
  return {1, 7, (64 << 10) / e - 1, (64 << 10) / e + 1, (1 << 20) / e - 1, (1 << 20) / e + 1,
          (5 << 19) / e + 3};
}

TEST(ShmCollectives, AllreduceMatchesTheFoldAtEverySizeBoundaryOnTwoThreeAndFourRanks) {
  struct Case { at::ScalarType dtype; ReduceOp op; RedOp red; };
  const std::vector<Case> cases = {{at::kFloat, ReduceOp::Sum, RedOp::SUM}, {at::kFloat, ReduceOp::Avg, RedOp::AVG},
                                   {at::kBFloat16, ReduceOp::Sum, RedOp::SUM}, {at::kBFloat16, ReduceOp::Avg, RedOp::AVG},
                                   {at::kHalf, ReduceOp::Sum, RedOp::SUM}, {at::kDouble, ReduceOp::Max, RedOp::MAX},
                                   {at::kLong, ReduceOp::Sum, RedOp::SUM}, {at::kInt, ReduceOp::Min, RedOp::MIN}};
  for (int world : {2, 3, 4}) {
    run_ranks(world, [&](int rank, std::shared_ptr<Communicator> comm) {
      for (const Case& c : cases) {
        for (int64_t count : boundary_counts(c.dtype)) {
          std::vector<at::Tensor> rows;
          for (int r = 0; r < world; ++r) rows.push_back(sample(c.dtype, count, 7 * r + count));
          at::Tensor mine = rows[rank].clone();
          comm->allreduce(mine, c.op).wait();
          // fp16 AVG is divided before the sum by the Communicator (for Gloo's sake): SUM of divided rows.
          if (c.dtype == at::kHalf && c.op == ReduceOp::Avg) continue;
          ASSERT_TRUE(at::equal(mine, fold(rows, c.red)))
              << "world " << world << " rank " << rank << " " << c.dtype << " op " << static_cast<int>(c.red)
              << " count " << count;
        }
      }
    }, paisoar::testing::test_options(Backend::Shm));
  }
}

TEST(ShmCollectives, ReduceScatterMatchesTheFoldAcrossSlotPieces) {
  for (int world : {2, 3, 4}) {
    run_ranks(world, [&](int rank, std::shared_ptr<Communicator> comm) {
      for (auto [dtype, op, red] : {std::tuple{at::kFloat, ReduceOp::Sum, RedOp::SUM},
                                    std::tuple{at::kFloat, ReduceOp::Avg, RedOp::AVG},
                                    std::tuple{at::kBFloat16, ReduceOp::Avg, RedOp::AVG},
                                    std::tuple{at::kLong, ReduceOp::Max, RedOp::MAX}}) {
        // Per-rank chunks: one element, a slot's share -1/+1, two slots and a tail.
        const int64_t e = c10::elementSize(dtype);
        for (int64_t chunk : {int64_t{1}, (1 << 20) / e / world - 1, (1 << 20) / e / world + 1, (5 << 19) / e + 3}) {
          std::vector<at::Tensor> inputs;
          for (int r = 0; r < world; ++r) inputs.push_back(sample(dtype, chunk * world, 11 * r + chunk));
          at::Tensor out = at::empty({chunk}, at::TensorOptions().dtype(dtype));
          comm->reduce_scatter(out, inputs[rank], op).wait();
          std::vector<at::Tensor> mine;
          for (int r = 0; r < world; ++r) mine.push_back(inputs[r].narrow(0, rank * chunk, chunk));
          ASSERT_TRUE(at::equal(out, fold(mine, red))) << "world " << world << " " << dtype << " chunk " << chunk;
        }
      }
    }, paisoar::testing::test_options(Backend::Shm));
  }
}

TEST(ShmCollectives, AllgatherAndBroadcastCopyEveryByteAcrossSlotPiecesOnTwoThreeAndFourRanks) {
  for (int world : {2, 3, 4}) {
    run_ranks(world, [&](int rank, std::shared_ptr<Communicator> comm) {
      for (auto dtype : {at::kBFloat16, at::kLong, at::kBool}) {
        for (int64_t count : boundary_counts(dtype)) {
          std::vector<at::Tensor> inputs;
          for (int r = 0; r < world; ++r) inputs.push_back(sample(dtype, count, 13 * r + count));
          at::Tensor gathered = at::empty({world * count}, at::TensorOptions().dtype(dtype));
          comm->allgather_into(gathered, inputs[rank]).wait();
          ASSERT_TRUE(at::equal(gathered, at::cat(inputs))) << "world " << world << " " << dtype << " " << count;
          // In place: the input is this rank's part of the output, as ZeRO-3 gathers parameters.
          at::Tensor in_place = at::zeros({world * count}, at::TensorOptions().dtype(dtype));
          in_place.narrow(0, rank * count, count).copy_(inputs[rank]);
          comm->allgather_into(in_place, in_place.narrow(0, rank * count, count)).wait();
          ASSERT_TRUE(at::equal(in_place, at::cat(inputs))) << "in place, world " << world << " " << count;
          at::Tensor mine = rank == world - 1 ? inputs[world - 1].clone() : at::zeros({count}, at::TensorOptions().dtype(dtype));
          comm->broadcast(mine, world - 1).wait();
          ASSERT_TRUE(at::equal(mine, inputs[world - 1])) << "broadcast, world " << world << " " << count;
        }
      }
    }, paisoar::testing::test_options(Backend::Shm));
  }
}

TEST(ShmCollectives, ASmallCollectiveNobodyWaitsForStillCompletes) {
  run_ranks(2, [&](int rank, std::shared_ptr<Communicator> comm) {
    auto t = torch::full({4}, static_cast<float>(rank + 1));
    auto work = comm->allreduce(t);  // queued for the caller's wait; the lane's thread takes it
    const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(20);
    while (!work.is_completed() && std::chrono::steady_clock::now() < give_up) {
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    ASSERT_TRUE(work.is_completed());
    EXPECT_TRUE(torch::equal(t, torch::full({4}, 3.f)));
    work.wait();
  }, paisoar::testing::test_options(Backend::Shm));
}

TEST(ShmCollectives, SeveralIssuedBeforeOneWaitRunInIssueOrder) {
  run_ranks(3, [&](int rank, std::shared_ptr<Communicator> comm) {
    std::vector<at::Tensor> ts;
    std::vector<paisoar::comm::Work> works;
    for (int i = 0; i < 6; ++i) {
      // Small and large mixed: the large ones wake the lane's thread, the small ones wait for a caller.
      const int64_t count = i % 2 ? (3 << 20) / 4 : 10;
      ts.push_back(torch::full({count}, static_cast<float>(rank + i)));
      works.push_back(comm->allreduce(ts.back()));
    }
    works.back().wait();  // runs or waits for every earlier one first
    for (int i = 0; i < 6; ++i) {
      EXPECT_TRUE(works[i].is_completed()) << i;
      EXPECT_EQ(ts[i][0].item<float>(), static_cast<float>(3 + 3 * i)) << i;
    }
    for (auto& w : works) w.wait();
  }, paisoar::testing::test_options(Backend::Shm));
}

}  // namespace shm_reductions_test
