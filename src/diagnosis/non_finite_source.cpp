// find_non_finite_source: a RegionRunner that takes every region, runs it
// plainly and notes the first one whose output is not finite (nested regions
// end first, so the innermost is named); the forward re-run under the run's
// PrecisionContext with that runner active instead of activation
// checkpointing; the pins tried by adding Full rules to a copy of the policy.
#include "src/diagnosis/non_finite_source.h"

#include "src/diagnosis/probe_guard.h"

#include <ATen/autocast_mode.h>
#include <c10/util/Exception.h>
#include <torch/autograd.h>

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

// Takes every region, keeps what backward needs to judge it: the innermost
// regions' inputs, outputs and parameters, in forward order.
class KeepRegions : public amp::RegionRunner {
 public:
  struct Kept {
    std::string name, precision;
    torch::Tensor input, output;
    std::vector<torch::Tensor> params;
  };
  bool takes(const std::string&) override { return true; }
  torch::Tensor run(const std::string& name, Fn fn, const torch::Tensor& x, std::vector<torch::Tensor> params) override {
    const std::string precision = current_precision(x.device().type());
    const size_t before = entered_++;
    torch::Tensor y = fn(x);
    if (entered_ == before + 1) kept.push_back({name, precision, x, y, std::move(params)});  // nothing nested
    return y;
  }
  std::vector<Kept> kept;

 private:
  size_t entered_ = 0;
};

std::string samples_text(const torch::Tensor& indices) {
  if (!indices.defined() || indices.numel() == 0) return "";
  const auto ids = indices.to(torch::kCPU).to(torch::kLong);
  const int64_t shown = std::min<int64_t>(ids.numel(), 8);
  std::string out = " (samples ";
  for (int64_t i = 0; i < shown; ++i) out += (i ? ", " : "") + std::to_string(ids[i].item<int64_t>());
  if (ids.numel() > shown) out += ", ... " + std::to_string(ids.numel()) + " in all";
  return out + ")";
}

std::string list_text(const std::vector<std::string>& names) {
  std::string out;
  for (const auto& n : names) out += (out.empty() ? "" : ", ") + n;
  return out;
}

// The pins that made it finite, as the config lines to add and their C++ and
// Python equivalents.
std::string pin_advice(const std::vector<std::string>& pins, const std::string& outcome) {
  return "; pinned to fp32 (" + list_text(pins) + ") " + outcome + ": add to the config\n  amp:\n    fp32_modules: [" +
         list_text(pins) + "]\n(C++ without a config: PrecisionPolicy::add(\"" + pins.front() +
         "\", amp::Precision::Full); Python: decorate its forward with "
         "@torch.amp.custom_fwd(device_type=..., cast_inputs=torch.float32))";
}

}  // namespace

NonFiniteSource find_non_finite_source(torch::nn::Module& model, const ForwardFn& forward, const LossFn& loss_fn,
                                       const torch::Tensor& data, const torch::Tensor& labels,
                                       const Precision& precision) {
  const ProbeGuard untouched(model);
  torch::NoGradGuard no_grad;
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
  return source;
}

namespace {

// One backward of the re-run: the innermost region whose backward made the
// first non-finite gradient ("" when none did), and whether any gradient was
// non-finite.
struct Backward {
  bool finite = true;
  std::string region, precision;
};
Backward run_backward(const ForwardFn& forward, const LossFn& loss_fn, const torch::Tensor& data,
                      const torch::Tensor& labels, const Precision& precision, double scale) {
  KeepRegions keep;
  torch::Tensor loss;
  {
    PrecisionContext context(precision);
    amp::ActiveRegionRunner active(keep);
    loss = loss_fn(forward(data), labels);
  }
  std::vector<torch::Tensor> wrt;  // per region: output, input (when it needs a gradient), parameters
  std::vector<std::vector<size_t>> inputs_of(keep.kept.size()), params_of(keep.kept.size());
  std::vector<size_t> output_of(keep.kept.size());
  for (size_t k = 0; k < keep.kept.size(); ++k) {
    const auto& r = keep.kept[k];
    output_of[k] = wrt.size();
    wrt.push_back(r.output);
    if (r.input.requires_grad()) {
      inputs_of[k].push_back(wrt.size());
      wrt.push_back(r.input);
    }
    for (const auto& p : r.params) {
      if (p.requires_grad()) {
        params_of[k].push_back(wrt.size());
        wrt.push_back(p);
      }
    }
  }
  Backward b;
  if (wrt.empty() || !loss.requires_grad()) return b;
  const auto grads = torch::autograd::grad({loss * scale}, wrt, {}, false, false, /*allow_unused=*/true);
  for (const auto& g : grads) b.finite = b.finite && all_finite(g);
  for (size_t k = keep.kept.size(); k-- > 0;) {  // the order backward reaches them
    const auto bad = [&](const std::vector<size_t>& at) {
      return std::any_of(at.begin(), at.end(), [&](size_t i) { return !all_finite(grads[i]); });
    };
    if (!all_finite(grads[output_of[k]])) break;  // made further down: a region after this one, or the loss
    if (bad(inputs_of[k]) || bad(params_of[k])) {
      b.region = keep.kept[k].name;
      b.precision = keep.kept[k].precision;
      break;
    }
  }
  return b;
}

}  // namespace

NonFiniteGradientSource find_non_finite_gradient_source(torch::nn::Module& model, const ForwardFn& forward,
                                                        const LossFn& loss_fn, const torch::Tensor& data,
                                                        const torch::Tensor& labels, const Precision& precision,
                                                        double scale) {
  const ProbeGuard untouched(model);
  NonFiniteGradientSource source;
  Precision tried = precision;
  std::vector<std::string> pinned;
  for (int round = 0; round <= kMaxPins; ++round) {
    const Backward b = run_backward(forward, loss_fn, data, labels, tried, scale);
    if (round == 0) {
      source.reproduced = !b.finite;
      source.region = b.region;
      source.region_precision = b.precision;
    }
    if (b.finite) {
      source.pins = pinned;
      break;
    }
    if (b.region.empty() || b.precision == "fp32" ||
        std::find(pinned.begin(), pinned.end(), b.region) != pinned.end()) {
      break;
    }
    pinned.push_back(b.region);
    tried.policy.add(b.region, amp::Precision::Full);
  }
  return source;
}

std::string non_finite_gradient_advice(const NonFiniteGradientSource& s, int rank, int64_t step, int64_t skipped,
                                       double scale, const torch::Tensor& indices) {
  std::ostringstream out;
  out << "rank " << rank << ", step " << step << ": the loss scaler skipped " << skipped
      << " steps in a row (the gradients were not finite; scale now " << scale << "); its last micro-batch"
      << samples_text(indices) << " re-run: ";
  if (!s.reproduced) {
    out << "its gradients are finite at this scale, so the scale was still coming down from amp.init_scale: "
           "lower amp.init_scale (e.g. to " << std::max(1.0, scale) << ") to skip fewer steps at the start";
    return out.str();
  }
  if (s.region.empty()) {
    out << "no named region's backward made the first NaN or inf (the loss's own gradient, or code outside "
           "amp::in_region): lower amp.init_scale, or check the loss";
    return out.str();
  }
  out << "the first non-finite gradient comes from the backward of region '" << s.region << "', which ran in "
      << s.region_precision;
  if (!s.pins.empty()) {
    out << pin_advice(s.pins, "its gradients are finite at this scale");
  } else {
    out << "; pinning it to fp32 did not help: lower optimizer.lr (try a tenth) or set optimizer.clip_grad_norm: 1.0";
  }
  return out.str();
}

std::string non_finite_advice(const NonFiniteSource& s, int rank, int64_t step, int64_t micro,
                              const torch::Tensor& indices) {
  std::ostringstream out;
  out << "rank " << rank << ", step " << step << ", micro-batch " << micro << samples_text(indices) << ": ";
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
    out << pin_advice(s.pins, "the micro-batch's loss is finite");
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
