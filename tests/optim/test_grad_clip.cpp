// clip_grad_norm_ against torch::nn::utils::clip_grad_norm_ and the norm
// written out by hand in double precision: one rank; gradients sharded over 2
// and 3 thread ranks (must equal clipping the whole set in one process);
// loss-scaled gradients (must equal unscale-then-clip); bf16/fp16 gradients;
// non-finite norms; bad input (messages checked).
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <cmath>
#include <functional>
#include <limits>
#include <string>

#include "paisoar/amp.h"
#include "paisoar/optim.h"
#include "tests/support/thread_ranks.h"
#include "tests/support/expect_error.h"

using paisoar::optim::clip_grad_norm_;
using paisoar::optim::ClipGradNormOptions;

namespace {

const double kInf = std::numeric_limits<double>::infinity();

// Tolerances: the norm and clipped gradients are float computations (per-tensor
// norms, the coefficient applied to fp32 gradients) compared with PyTorch's
// float ones or with double: relative 1e-6.
constexpr double kRel = 1e-6;

// Deterministic gradient values for tensor `salt`.
torch::Tensor values(torch::IntArrayRef shape, double salt, double magnitude = 1.0) {
  auto n = c10::multiply_integers(shape);
  auto i = torch::arange(n, torch::kDouble);
  return (torch::sin(0.37 * i + salt) * magnitude * (1.0 + 0.1 * salt)).view(shape);
}

// Parameters with gradients: fp32 tensors of several shapes, one without grad.
std::vector<torch::Tensor> clip_params(double magnitude = 1.0) {
  std::vector<torch::Tensor> params;
  const std::vector<std::vector<int64_t>> shapes = {{4, 5}, {7}, {3, 3, 2}, {11}, {6, 4}, {30}};
  for (size_t t = 0; t < shapes.size(); ++t) {
    auto p = torch::zeros(shapes[t], torch::requires_grad());
    p.mutable_grad() = values(shapes[t], static_cast<double>(t), magnitude).to(torch::kFloat);
    params.push_back(p);
  }
  params.push_back(torch::zeros({5}, torch::requires_grad()));  // no grad
  return params;
}

std::vector<torch::Tensor> clone_params(const std::vector<torch::Tensor>& params) {
  std::vector<torch::Tensor> out;
  for (const auto& p : params) {
    auto q = p.detach().clone().requires_grad_();
    if (p.grad().defined()) q.mutable_grad() = p.grad().clone();
    out.push_back(q);
  }
  return out;
}

// sqrt(sum g^2) or max |g| over every gradient, in double, element by element.
double norm_by_hand(const std::vector<torch::Tensor>& params, double norm_type) {
  double acc = 0;
  for (const auto& p : params) {
    if (!p.grad().defined()) continue;
    auto g = p.grad().to(torch::kDouble).contiguous().view(-1);
    const double* d = g.data_ptr<double>();
    for (int64_t i = 0; i < g.numel(); ++i) {
      acc = norm_type == kInf ? std::max(acc, std::abs(d[i])) : acc + d[i] * d[i];
    }
  }
  return norm_type == kInf ? acc : std::sqrt(acc);
}

void expect_close(const torch::Tensor& got, const torch::Tensor& want, double rel, const std::string& what) {
  auto g = got.to(torch::kDouble).contiguous().view(-1), w = want.to(torch::kDouble).contiguous().view(-1);
  ASSERT_EQ(g.numel(), w.numel()) << what;
  for (int64_t i = 0; i < g.numel(); ++i) {
    const double a = g[i].item<double>(), b = w[i].item<double>();
    EXPECT_NEAR(a, b, rel * std::max(std::abs(b), 1e-3)) << what << "[" << i << "]";
  }
}

void expect_grads_close(const std::vector<torch::Tensor>& got, const std::vector<torch::Tensor>& want,
                        double rel) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t t = 0; t < got.size(); ++t) {
    ASSERT_EQ(got[t].grad().defined(), want[t].grad().defined());
    if (got[t].grad().defined()) expect_close(got[t].grad(), want[t].grad(), rel, "grad " + std::to_string(t));
  }
}

using paisoar::testing::expect_error;

}  // namespace

// --- one rank ---

TEST(ClipGradNorm, MatchesTorchAndTheFormula) {
  for (double norm_type : {2.0, kInf}) {
    auto ours = clip_params(), theirs = clone_params(ours);
    const double by_hand = norm_by_hand(ours, norm_type);
    const double max_norm = 0.3 * by_hand;  // clips
    ClipGradNormOptions o;
    o.norm_type = norm_type;
    const double got = clip_grad_norm_(ours, max_norm, o);
    const double want = torch::nn::utils::clip_grad_norm_(theirs, max_norm, norm_type);
    EXPECT_NEAR(got, by_hand, kRel * by_hand) << "norm_type " << norm_type;
    EXPECT_NEAR(got, want, kRel * want) << "norm_type " << norm_type;
    expect_grads_close(ours, theirs, kRel);
    EXPECT_NEAR(norm_by_hand(ours, norm_type), max_norm, 1e-5 * max_norm);  // clipped to max_norm
  }
}

TEST(ClipGradNorm, BelowMaxNormLeavesGradientsBitForBit) {
  auto params = clip_params(), before = clone_params(params);
  const double norm = clip_grad_norm_(params, 1e3);
  EXPECT_NEAR(norm, norm_by_hand(before, 2.0), kRel * norm);
  for (size_t t = 0; t + 1 < params.size(); ++t) EXPECT_TRUE(torch::equal(params[t].grad(), before[t].grad()));
  EXPECT_DOUBLE_EQ(clip_grad_norm_(params, kInf), norm);  // infinity only measures
  EXPECT_EQ(clip_grad_norm_({torch::zeros({2}, torch::requires_grad())}, 1.0), 0.0);  // no grads
}

// --- loss-scaled gradients ---

// Clipping scaled gradients with grad_scale = the scaler's scale, then
// unscale_, equals PyTorch's recipe: unscale_, then clip.
TEST(ClipGradNorm, GradScaleEqualsUnscaleThenClip) {
  for (double norm_type : {2.0, kInf}) {
    for (double max_fraction : {0.3, 2.0}) {  // clipped, and not clipped
      paisoar::amp::GradScalerOptions so;
      so.init_scale = 1024.0;
      so.device = torch::Device(torch::kCPU);  // the gradients are scaled by hand, not through scale()
      paisoar::amp::GradScaler scaler_a(so), scaler_b(so);
      auto a = clip_params(), b = clone_params(a);
      const double true_norm = norm_by_hand(a, norm_type);
      for (auto* set : {&a, &b}) {
        for (auto& p : *set) {
          if (p.grad().defined()) p.mutable_grad().mul_(1024.0);  // a power of 2: exact
        }
      }
      torch::optim::SGD opt_a(a, 0.1), opt_b(b, 0.1);
      const double max_norm = max_fraction * true_norm;

      ClipGradNormOptions o;
      o.norm_type = norm_type;
      o.grad_scale = scaler_a.get_scale();
      const double norm_a = clip_grad_norm_(a, max_norm, o);
      scaler_a.unscale_(opt_a);

      scaler_b.unscale_(opt_b);
      ClipGradNormOptions plain;
      plain.norm_type = norm_type;
      const double norm_b = clip_grad_norm_(b, max_norm, plain);

      EXPECT_NEAR(norm_a, true_norm, kRel * true_norm);
      EXPECT_NEAR(norm_a, norm_b, kRel * norm_b);
      expect_grads_close(a, b, kRel);
    }
  }
}

// --- low precision ---

// bf16 gradients: the norm is accumulated and returned in fp32, not rounded to
// bf16's 8 bits (which would be off by up to 0.4%).
TEST(ClipGradNorm, Bf16AndMixedDtypesAccumulateInFloat) {
  auto p16 = torch::zeros({1000}, torch::requires_grad());
  p16.mutable_grad() = values({1000}, 0.5).to(torch::kBFloat16);
  auto p32 = torch::zeros({40}, torch::requires_grad());
  p32.mutable_grad() = values({40}, 1.5).to(torch::kFloat);
  auto p64 = torch::zeros({3, 3}, torch::dtype(torch::kDouble).requires_grad(true));
  p64.mutable_grad() = values({3, 3}, 2.5);

  const double exact16 = norm_by_hand({p16}, 2.0);
  const double rounded = static_cast<double>(c10::BFloat16(static_cast<float>(exact16)));
  ASSERT_GT(std::abs(rounded - exact16), 1e-4 * exact16) << "pick values whose bf16 norm is off";
  EXPECT_NEAR(clip_grad_norm_({p16}, kInf), exact16, 1e-5 * exact16);

  const std::vector<torch::Tensor> all = {p16, p32, p64};
  const double exact = norm_by_hand(all, 2.0);
  const auto before = p16.grad().to(torch::kDouble);
  EXPECT_NEAR(clip_grad_norm_(all, 0.5 * exact), exact, 1e-5 * exact);
  EXPECT_NEAR(norm_by_hand(all, 2.0), 0.5 * exact, 1e-2 * exact);  // bf16 rounding of the result
  expect_close(p16.grad(), before * (0.5 * exact / (exact + 1e-6)), 1.0 / 128, "bf16 grad");
  EXPECT_EQ(p16.grad().scalar_type(), torch::kBFloat16);
}

// fp16 gradients whose squares overflow fp16 (x^2 > 65504) but whose norm does not.
TEST(ClipGradNorm, Fp16SquaresThatOverflowFp16) {
  auto p = torch::zeros({4096}, torch::requires_grad());
  p.mutable_grad() = values({4096}, 0.0, 300.0).to(torch::kHalf);
  const double exact = norm_by_hand({p}, 2.0);
  ASSERT_LT(exact, 65504.0);
  EXPECT_NEAR(clip_grad_norm_({p}, kInf), exact, 1e-5 * exact);
}

// --- non-finite ---

TEST(ClipGradNorm, NonFiniteNormClipsNothing) {
  for (double bad : {kInf, std::nan("")}) {
    auto params = clip_params();
    params[1].mutable_grad()[3] = bad;
    auto before = clone_params(params);
    const double norm = clip_grad_norm_(params, 0.1);
    EXPECT_FALSE(std::isfinite(norm));
    EXPECT_EQ(std::isnan(norm), std::isnan(bad));
    for (size_t t = 0; t + 1 < params.size(); ++t) {  // untouched (NaN compares equal here)
      EXPECT_TRUE(torch::allclose(params[t].grad(), before[t].grad(), 0, 0, /*equal_nan=*/true)) << t;
    }

    ClipGradNormOptions strict;
    strict.error_if_nonfinite = true;
    expect_error([&] { clip_grad_norm_(params, 0.1, strict); }, {"cannot be clipped", "GradScaler"});
  }
}

// --- sharded across ranks ---

// Rank r of `world` holds whole tensors t with t % world == r (tensor-parallel
// style) and chunk r of the last, flat tensor (ZeRO style): disjoint parts
// that together are the full set. Each rank clips its part with `comm`; the
// norm (identical on every rank) and each part must equal clipping the full
// set in one process (relative 1e-6).
void check_sharded(int world, double norm_type) {
  const auto full = clip_params();
  auto reference = clone_params(full);
  const double by_hand = norm_by_hand(full, norm_type);
  const double max_norm = 0.25 * by_hand;
  const double want = torch::nn::utils::clip_grad_norm_(reference, max_norm, norm_type);
  const size_t flat = full.size() - 2;  // index of the {30} tensor; the last has no grad

  std::vector<double> norms(world);
  std::vector<std::vector<torch::Tensor>> parts(world);  // written by rank r's thread only
  paisoar::testing::run_ranks(world, [&](int rank, std::shared_ptr<paisoar::comm::Communicator> comm) {
    std::vector<torch::Tensor> mine;
    for (size_t t = 0; t < flat; ++t) {
      if (static_cast<int>(t % world) == rank) mine.push_back(clone_params({full[t]})[0]);
    }
    auto shard = torch::zeros({1}, torch::requires_grad());
    shard.mutable_grad() = full[flat].grad().chunk(world)[rank].clone();
    mine.push_back(shard);
    ClipGradNormOptions o;
    o.norm_type = norm_type;
    o.comm = comm;
    norms[rank] = clip_grad_norm_(mine, max_norm, o);
    parts[rank] = mine;
  });

  for (int rank = 0; rank < world; ++rank) {
    EXPECT_EQ(norms[rank], norms[0]) << "rank " << rank << " got another norm";
    EXPECT_NEAR(norms[rank], by_hand, kRel * by_hand);
    EXPECT_NEAR(norms[rank], want, kRel * want);
    size_t i = 0;
    for (size_t t = 0; t < flat; ++t) {
      if (static_cast<int>(t % world) != rank) continue;
      expect_close(parts[rank][i++].grad(), reference[t].grad(), kRel, "tensor " + std::to_string(t));
    }
    expect_close(parts[rank][i].grad(), reference[flat].grad().chunk(world)[rank], kRel, "shard");
  }
}

TEST(ClipGradNormSharded, TwoRanksL2) { check_sharded(2, 2.0); }
TEST(ClipGradNormSharded, ThreeRanksL2) { check_sharded(3, 2.0); }
TEST(ClipGradNormSharded, TwoRanksInf) { check_sharded(2, kInf); }
TEST(ClipGradNormSharded, ThreeRanksInf) { check_sharded(3, kInf); }

// A rank holding no gradient still joins the allreduce (else its peers would
// hang) and gets the same norm.
TEST(ClipGradNormSharded, RankWithoutGradients) {
  const auto full = clip_params();
  const double by_hand = norm_by_hand(full, 2.0);
  std::vector<double> norms(3);
  paisoar::testing::run_ranks(3, [&](int rank, std::shared_ptr<paisoar::comm::Communicator> comm) {
    std::vector<torch::Tensor> mine;
    if (rank < 2) {
      for (size_t t = rank; t < full.size(); t += 2) mine.push_back(clone_params({full[t]})[0]);
    } else {
      mine.push_back(torch::zeros({2}, torch::requires_grad()));  // no grad
    }
    ClipGradNormOptions o;
    o.comm = comm;
    norms[rank] = clip_grad_norm_(mine, 0.5 * by_hand, o);
  });
  for (double n : norms) EXPECT_NEAR(n, by_hand, kRel * by_hand);
}

// --- bad input ---

TEST(ClipGradNorm, BadInputNamesTheArgument) {
  auto params = clip_params();
  ClipGradNormOptions o;
  o.norm_type = 1.0;
  expect_error([&] { clip_grad_norm_(params, 1.0, o); }, {"norm_type must be 2 or infinity", "got 1"});
  expect_error([&] { clip_grad_norm_(params, 0.0); }, {"max_norm must be > 0"});
  expect_error([&] { clip_grad_norm_(params, std::nan("")); }, {"max_norm must be > 0"});
  o = {};
  o.grad_scale = 0;
  expect_error([&] { clip_grad_norm_(params, 1.0, o); }, {"grad_scale must be positive", "get_scale()"});
  o.grad_scale = kInf;
  expect_error([&] { clip_grad_norm_(params, 1.0, o); }, {"grad_scale must be positive"});

  auto sparse = torch::zeros({4}, torch::requires_grad());
  sparse.mutable_grad() = torch::ones({4}).to_sparse();
  expect_error([&] { clip_grad_norm_({sparse}, 1.0); }, {"sparse gradients are not supported"});
}
