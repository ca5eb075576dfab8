// custom_fwd / custom_bwd: the forward's autocast state travels to backward in
// the context's saved_data.
#include "paisoar/amp/custom_function.h"

#include <stdexcept>

#include "src/amp/cast_floating.h"

namespace paisoar::amp {
namespace {

constexpr const char* kEnabled = "paisoar.amp.enabled";
constexpr const char* kDtype = "paisoar.amp.dtype";
constexpr const char* kDevice = "paisoar.amp.device";

}  // namespace

custom_fwd::custom_fwd(torch::autograd::AutogradContext* ctx,
                       std::optional<c10::ScalarType> cast_inputs, c10::DeviceType device) {
  TORCH_CHECK(ctx != nullptr, "custom_fwd needs the forward's AutogradContext");
  const bool enabled = is_autocast_enabled(device);
  // With cast_inputs the op asked for one precision: backward runs without
  // autocast too (torch.cuda.amp.custom_fwd records False in that case).
  ctx->saved_data[kEnabled] = enabled && !cast_inputs;
  ctx->saved_data[kDtype] = static_cast<int64_t>(autocast_dtype(device));
  ctx->saved_data[kDevice] = static_cast<int64_t>(device);
  if (cast_inputs && enabled) {
    cast_to_ = cast_inputs;
    AutocastOptions off;
    off.device = device;
    off.enabled = false;
    guard_.emplace(off);
  }
}

torch::Tensor custom_fwd::cast(const torch::Tensor& x) const {
  return detail::cast_floating(x, cast_to_);
}

custom_bwd::custom_bwd(torch::autograd::AutogradContext* ctx) {
  TORCH_CHECK(ctx != nullptr, "custom_bwd needs the backward's AutogradContext");
  const auto& saved = ctx->saved_data;
  if (saved.find(kEnabled) == saved.end()) {
    C10_THROW_ERROR(Error, 
        "custom_bwd: forward() did not construct a paisoar::amp::custom_fwd; "
        "add one at the top of forward() so backward knows its autocast state");
  }
  AutocastOptions options;
  options.device = static_cast<c10::DeviceType>(saved.at(kDevice).toInt());
  options.enabled = saved.at(kEnabled).toBool();
  options.dtype = static_cast<c10::ScalarType>(saved.at(kDtype).toInt());
  guard_.emplace(options);
}

}  // namespace paisoar::amp
