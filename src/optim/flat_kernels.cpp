// Fused optimizer kernels: plain loops the compiler vectorizes, split across
// threads by parameter with at::parallel_for.
#include "src/optim/flat_kernels.h"

#include <ATen/Parallel.h>

#include <algorithm>
#include <cmath>

namespace paisoar::optim::detail {
namespace {

// Calls fn(segment) for every segment, in parallel.
template <typename Fn>
void for_each_segment(const std::vector<Segment>& segs, Fn&& fn) {
  at::parallel_for(0, static_cast<int64_t>(segs.size()), 1, [&](int64_t begin, int64_t end) {
    for (int64_t s = begin; s < end; ++s) fn(segs[s]);
  });
}

// Norms are summed in blocks of T (which vectorize) added into a double (which
// keeps a million-element layer's norm accurate).
constexpr int64_t kBlock = 1024;

// ratio = num / den, or 1 when either is 0 (see layerwise.h).
double guarded(double num, double den) { return num > 0 && den > 0 ? num / den : 1.0; }

}  // namespace

template <typename T>
void lars_step(T* p, const T* g, T* s1, const std::vector<Segment>& segs, const FlatHyper& h) {
  const T m = h.momentum;
  for_each_segment(segs, [&](const Segment& seg) {
    T* pp = p + seg.offset;
    const T* gg = g + seg.offset;
    T* bb = s1 + seg.offset;
    const double wd = seg.exempt ? 0.0 : h.weight_decay;
    double trust = 1.0;
    if (!seg.exempt) {
      double w2 = 0, g2 = 0;
      for (int64_t b = 0; b < seg.numel; b += kBlock) {
        const int64_t e = std::min(seg.numel, b + kBlock);
        T wb = 0, gb = 0;
        for (int64_t i = b; i < e; ++i) {
          wb += pp[i] * pp[i];
          gb += gg[i] * gg[i];
        }
        w2 += wb;
        g2 += gb;
      }
      const double wn = std::sqrt(w2), gn = std::sqrt(g2);
      if (gn > 0) trust = guarded(h.eta * wn, gn + wd * wn + h.eps);
    }
    const T scaled_lr = h.lr * trust, twd = wd;
    for (int64_t i = 0; i < seg.numel; ++i) {
      bb[i] = m * bb[i] + scaled_lr * (gg[i] + twd * pp[i]);
      pp[i] -= bb[i];
    }
  });
}

template <typename T>
void lamb_step(T* p, const T* g, T* s1, T* s2, T* scratch, const std::vector<Segment>& segs,
               const FlatHyper& h) {
  const T b1 = h.beta1, b2 = h.beta2, eps = h.eps, a1 = 1 - h.beta1, a2 = 1 - h.beta2;
  const T c1 = h.bias_correction ? 1 - std::pow(h.beta1, h.step) : 1.0;
  const T c2 = h.bias_correction ? 1 - std::pow(h.beta2, h.step) : 1.0;
  for_each_segment(segs, [&](const Segment& seg) {
    T* pp = p + seg.offset;
    const T* gg = g + seg.offset;
    T* mm = s1 + seg.offset;
    T* vv = s2 + seg.offset;
    T* uu = scratch + seg.offset;
    const T wd = seg.exempt ? 0.0 : h.weight_decay;
    double w2 = 0, u2 = 0;
    for (int64_t b = 0; b < seg.numel; b += kBlock) {
      const int64_t e = std::min(seg.numel, b + kBlock);
      T wb = 0, ub = 0;
      for (int64_t i = b; i < e; ++i) {
        mm[i] = b1 * mm[i] + a1 * gg[i];
        vv[i] = b2 * vv[i] + a2 * gg[i] * gg[i];
        uu[i] = (mm[i] / c1) / (std::sqrt(vv[i] / c2) + eps) + wd * pp[i];
        wb += pp[i] * pp[i];
        ub += uu[i] * uu[i];
      }
      w2 += wb;
      u2 += ub;
    }
    const T factor = h.lr * (seg.exempt ? 1.0 : guarded(std::sqrt(w2), std::sqrt(u2)));
    for (int64_t i = 0; i < seg.numel; ++i) pp[i] -= factor * uu[i];
  });
}

#define PAISOAR_INSTANTIATE(T)                                                                  \
  template void lars_step<T>(T*, const T*, T*, const std::vector<Segment>&, const FlatHyper&); \
  template void lamb_step<T>(T*, const T*, T*, T*, T*, const std::vector<Segment>&,           \
                             const FlatHyper&);
PAISOAR_INSTANTIATE(float)
PAISOAR_INSTANTIATE(double)
#undef PAISOAR_INSTANTIATE

}  // namespace paisoar::optim::detail
