// LARS and LAMB against their formulas written out by hand in double precision
// (plain loops over std::vector, no tensor ops), over several steps, for a
// matrix (adapted) and a bias (exempt); plus state save/load and bad options.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <cmath>
#include <sstream>

#include "paisoar/optim.h"

using paisoar::optim::LAMB;
using paisoar::optim::LAMBOptions;
using paisoar::optim::LARS;
using paisoar::optim::LARSOptions;

namespace {

using Vec = std::vector<double>;

double norm(const Vec& v) {
  double s = 0;
  for (double x : v) s += x * x;
  return std::sqrt(s);
}

Vec to_vec(const torch::Tensor& t) {
  auto c = t.to(torch::kDouble).contiguous().view(-1);
  return Vec(c.data_ptr<double>(), c.data_ptr<double>() + c.numel());
}

// Deterministic gradient for step k of a parameter with n elements.
Vec grad_at(int k, size_t n, double salt) {
  Vec g(n);
  for (size_t i = 0; i < n; ++i) g[i] = std::sin(0.7 * i + 1.3 * k + salt) * (0.5 + 0.1 * k);
  return g;
}

void expect_near(const torch::Tensor& got, const Vec& want, const char* what) {
  auto g = to_vec(got);
  ASSERT_EQ(g.size(), want.size());
  for (size_t i = 0; i < g.size(); ++i) {
    EXPECT_NEAR(g[i], want[i], 1e-5 * std::max(1.0, std::abs(want[i]))) << what << "[" << i << "]";
  }
}

struct Params {
  torch::Tensor w = torch::linspace(-1, 1, 12).view({3, 4}).requires_grad_();
  torch::Tensor b = torch::full({4}, 0.1).requires_grad_();
  void set_grads(int k) {
    w.mutable_grad() = torch::tensor(grad_at(k, 12, 0.0), torch::kDouble).to(torch::kFloat).view({3, 4});
    b.mutable_grad() = torch::tensor(grad_at(k, 4, 5.0), torch::kDouble).to(torch::kFloat);
  }
};

TEST(LARS, MatchesTheFormulaByHand) {
  const double lr = 0.5, momentum = 0.9, wd = 1e-2, eta = 0.02, eps = 1e-9;
  Params p;
  LARS opt({p.w, p.b}, LARSOptions(lr).momentum(momentum).weight_decay(wd).eta(eta).eps(eps));
  Vec w = to_vec(p.w), b = to_vec(p.b), vw(12, 0), vb(4, 0);
  for (int k = 0; k < 4; ++k) {
    p.set_grads(k);
    opt.step();
    // Matrix: trust-scaled, with weight decay.
    Vec g = grad_at(k, 12, 0.0);
    double wn = norm(w), gn = norm(g);
    double trust = eta * wn / (gn + wd * wn + eps);
    for (size_t i = 0; i < 12; ++i) {
      vw[i] = momentum * vw[i] + lr * trust * (g[i] + wd * w[i]);
      w[i] -= vw[i];
    }
    // Bias: exempt, plain momentum SGD.
    Vec gb = grad_at(k, 4, 5.0);
    for (size_t i = 0; i < 4; ++i) {
      vb[i] = momentum * vb[i] + lr * gb[i];
      b[i] -= vb[i];
    }
    expect_near(p.w, w, "LARS w");
    expect_near(p.b, b, "LARS b");
  }
}

TEST(LAMB, MatchesTheFormulaByHand) {
  const double lr = 0.01, b1 = 0.9, b2 = 0.99, eps = 1e-6, wd = 0.05;
  Params p;
  LAMB opt({p.w, p.b}, LAMBOptions(lr).betas({b1, b2}).eps(eps).weight_decay(wd));
  Vec w = to_vec(p.w), b = to_vec(p.b), mw(12, 0), vw(12, 0), mb(4, 0), vb(4, 0);
  for (int k = 0; k < 4; ++k) {
    p.set_grads(k);
    opt.step();
    const int t = k + 1;
    const double c1 = 1 - std::pow(b1, t), c2 = 1 - std::pow(b2, t);
    Vec g = grad_at(k, 12, 0.0), r(12);
    for (size_t i = 0; i < 12; ++i) {
      mw[i] = b1 * mw[i] + (1 - b1) * g[i];
      vw[i] = b2 * vw[i] + (1 - b2) * g[i] * g[i];
      r[i] = (mw[i] / c1) / (std::sqrt(vw[i] / c2) + eps) + wd * w[i];
    }
    const double trust = norm(w) / norm(r);
    for (size_t i = 0; i < 12; ++i) w[i] -= lr * trust * r[i];
    Vec gb = grad_at(k, 4, 5.0);
    for (size_t i = 0; i < 4; ++i) {  // exempt: Adam without decay or trust
      mb[i] = b1 * mb[i] + (1 - b1) * gb[i];
      vb[i] = b2 * vb[i] + (1 - b2) * gb[i] * gb[i];
      b[i] -= lr * (mb[i] / c1) / (std::sqrt(vb[i] / c2) + eps);
    }
    expect_near(p.w, w, "LAMB w");
    expect_near(p.b, b, "LAMB b");
  }
}

TEST(LARS, ZeroWeightsOrGradientsUseATrustOfOne) {
  auto w = torch::zeros({2, 2}).requires_grad_();
  LARS opt({w}, LARSOptions(0.1).momentum(0));
  w.mutable_grad() = torch::ones({2, 2});
  opt.step();
  EXPECT_TRUE(torch::allclose(w, torch::full({2, 2}, -0.1)));  // not NaN, not 0
}

// Saving mid-run and loading into a fresh optimizer continues identically.
template <typename Opt, typename Options>
void expect_resume_is_exact(Options options) {
  Params a, b;
  Opt first({a.w, a.b}, options);
  for (int k = 0; k < 2; ++k) {
    a.set_grads(k);
    first.step();
  }
  std::stringstream saved;
  torch::save(first, saved);
  {
    torch::NoGradGuard no_grad;
    b.w.copy_(a.w);
    b.b.copy_(a.b);
  }
  Opt second({b.w, b.b}, options);
  torch::load(second, saved);
  a.set_grads(2);
  b.set_grads(2);
  first.step();
  second.step();
  EXPECT_TRUE(torch::equal(a.w, b.w));
  EXPECT_TRUE(torch::equal(a.b, b.b));
}

TEST(LARS, ResumeFromSavedStateIsExact) { expect_resume_is_exact<LARS>(LARSOptions(0.3).weight_decay(1e-3)); }
TEST(LAMB, ResumeFromSavedStateIsExact) { expect_resume_is_exact<LAMB>(LAMBOptions(0.01)); }

// A state saved for another model (same number of tensors, other shapes)
// is refused with the parameter named, and the optimizer keeps its own state.
template <typename Opt, typename Options>
void expect_foreign_state_is_refused(Options options, const std::string& field) {
  auto small = torch::randn({3, 4}).requires_grad_();
  Opt first({small}, options);
  small.mutable_grad() = torch::ones({3, 4});
  first.step();
  std::stringstream saved;
  torch::save(first, saved);

  auto big = torch::randn({5, 4}).requires_grad_();
  Opt second({big}, options);
  big.mutable_grad() = torch::ones({5, 4});
  second.step();
  try {
    torch::load(second, saved);
    FAIL() << "expected an error";
  } catch (const c10::Error& e) {
    EXPECT_NE(std::string(e.what()).find("the loaded state of parameter 0 of group 0 ('" + field +
                                         "') has shape [3, 4], the parameter [5, 4]"),
              std::string::npos)
        << e.what();
  }
  second.step();  // its own state is intact: no shape error
  EXPECT_EQ(big.sizes(), (std::vector<int64_t>{5, 4}));
}

TEST(LARS, ForeignStateIsRefused) {
  expect_foreign_state_is_refused<LARS>(LARSOptions(0.1).momentum(0.9), "momentum_buffer");
}
TEST(LAMB, ForeignStateIsRefused) { expect_foreign_state_is_refused<LAMB>(LAMBOptions(0.01), "exp_avg"); }

TEST(LARSAndLAMB, BadOptionsAreClearErrors) {
  auto w = torch::ones({2, 2}).requires_grad_();
  EXPECT_THROW(LARS({w}, LARSOptions(-1)), c10::Error);
  EXPECT_THROW(LARS({w}, LARSOptions(0.1).eta(0)), c10::Error);
  EXPECT_THROW(LAMB({w}, LAMBOptions(0.1).betas({1.0, 0.9})), c10::Error);
}

}  // namespace
