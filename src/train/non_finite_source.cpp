// find_non_finite_source: a RegionRunner that takes every region, runs it
// plainly and notes the first one whose output is not finite (nested regions
// end first, so the innermost is named); the forward re-run under the run's
// PrecisionContext with that runner active instead of activation
// checkpointing; the pins tried by adding Full rules to a copy of the policy.
#include "src/train/non_finite_source.h"

#include <ATen/autocast_mode.h>
#include <c10/util/Exception.h>

#include <algorithm>
#include <sstream>

namespace paisoar::train {
namespace {

bool all_finite(const torch::Tensor& t) {
  return !t.defined() || !t.is_floating_point() || torch::isfinite(t).all().item<bool>();
}

// The precision the code at this point runs in (inside a region's scope).
std::string current_precision(c10::DeviceType device) {
  if (!at::autocast::is_autocast_enabled(device)) return "fp32";
  const auto dtype = at::autocast::get_autocast_dtype(device);
  return dtype == torch::kHalf ? "fp16" : dtype == torch::kBFloat16 ? "bf16" : c10::toString(dtype);
}

class WatchRegions : public amp::RegionRunner {
 public:
  bool takes(const std::string&) override { return true; }
  torch::Tensor run(const std::string& name, Fn fn, const torch::Tensor& x, std::vector<torch::Tensor> params) override {
    const std::string precision = current_precision(x.device().type());
    torch::Tensor y = fn(x);
    if (first.empty() && !all_finite(y)) {
      first = name;
      first_precision = precision;
      first_params_finite = std::all_of(params.begin(), params.end(), all_finite);
    }
    return y;
  }

  std::string first, first_precision;
  bool first_params_finite = true;
};

std::string list_text(const std::vector<std::string>& names) {
  std::string out;
  for (const auto& n : names) out += (out.empty() ? "" : ", ") + n;
  return out;
}

}  // namespace

NonFiniteSource find_non_finite_source(torch::nn::Module& model, const ForwardFn& forward, const LossFn& loss_fn,
                                       const torch::Tensor& data, const torch::Tensor& labels,
                                       const Precision& precision) {
  torch::NoGradGuard no_grad;
  std::vector<torch::Tensor> buffers, kept;
  for (const auto& b : model.buffers()) {
    buffers.push_back(b);
    kept.push_back(b.clone());
  }
  NonFiniteSource source;
  source.input_finite = all_finite(data);
  Precision tried = precision;
  std::vector<std::string> pinned;
  for (int round = 0; round <= kMaxPins; ++round) {
    WatchRegions watch;
    torch::Tensor loss;
    {
      PrecisionContext context(tried);
      amp::ActiveRegionRunner active(watch);
      loss = loss_fn(forward(data), labels);
    }
    if (round == 0) {
      source.reproduced = !all_finite(loss);
      source.region = watch.first;
      source.region_precision = watch.first_precision;
      source.region_params_finite = watch.first_params_finite;
    }
    if (all_finite(loss)) {
      source.pins = pinned;  // empty in round 0: not reproduced
      break;
    }
    // No region, one already in fp32, or one whose parameters are broken: a pin cannot help.
    if (watch.first.empty() || watch.first_precision == "fp32" || !watch.first_params_finite ||
        std::find(pinned.begin(), pinned.end(), watch.first) != pinned.end()) {
      break;
    }
    pinned.push_back(watch.first);
    tried.policy.add(watch.first, amp::Precision::Full);
  }
  for (size_t i = 0; i < buffers.size(); ++i) buffers[i].copy_(kept[i]);
  return source;
}

std::string non_finite_advice(const NonFiniteSource& s, int rank, int64_t step, int64_t micro,
                              const torch::Tensor& indices) {
  std::ostringstream out;
  out << "rank " << rank << ", step " << step << ", micro-batch " << micro;
  if (indices.defined() && indices.numel() > 0) {
    const auto ids = indices.to(torch::kCPU).to(torch::kLong);
    const int64_t shown = std::min<int64_t>(ids.numel(), 8);
    out << " (samples ";
    for (int64_t i = 0; i < shown; ++i) out << (i ? ", " : "") << ids[i].item<int64_t>();
    if (ids.numel() > shown) out << ", ... " << ids.numel() << " in all";
    out << ")";
  }
  out << ": ";
  if (!s.input_finite) {
    out << "the input data itself holds NaN or inf; check these samples (or the data pipeline's normalisation)";
    return out.str();
  }
  if (!s.reproduced) {
    out << "the loss was not finite, but the same micro-batch re-run was (a nondeterministic op, dropout or a "
           "data race?); lower optimizer.lr or set optimizer.clip_grad_norm if it recurs";
    return out.str();
  }
  if (s.region.empty()) {
    out << "no named region's output went non-finite, so the loss function (or code outside amp::in_region) "
           "made it; check the loss on these samples' labels and logits";
    return out.str();
  }
  out << "the first non-finite output is region '" << s.region << "', which ran in " << s.region_precision;
  if (!s.pins.empty()) {
    out << "; pinned to fp32 (" << list_text(s.pins) << ") the micro-batch's loss is finite: add to the config\n"
        << "  amp:\n    fp32_modules: [" << list_text(s.pins) << "]\n"
        << "(C++ without a config: PrecisionPolicy::add(\"" << s.pins.front()
        << "\", amp::Precision::Full); Python: run its forward under torch.autocast(enabled=False))";
  } else if (!s.region_params_finite) {
    out << "; its parameters already hold NaN or inf, so an optimizer step before this one broke them (the "
           "learning rate is too high for this model, or a gradient blew up): lower optimizer.lr (try a tenth), "
           "set optimizer.clip_grad_norm: 1.0, and resume from a checkpoint taken before";
  } else if (s.region_precision == "fp32") {
    out << ", so it is not a precision problem: its activations grew past float32's range (weights that "
           "diverged, or inputs far too large): lower optimizer.lr (try a tenth) or set "
           "optimizer.clip_grad_norm: 1.0";
  } else {
    out << "; pinning it (and up to " << kMaxPins << " more) to fp32 did not make the loss finite: lower "
           "optimizer.lr (try a tenth), set optimizer.clip_grad_norm: 1.0, or a lower amp.init_scale";
  }
  return out.str();
}

}  // namespace paisoar::train
