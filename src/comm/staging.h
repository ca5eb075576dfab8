// Helpers shared by the collectives: contiguous staging of outputs, byte views
// for data-movement ops (so bf16, bool and complex travel through Gloo), and
// submission with errors wrapped.
#pragma once

#include <ATen/ATen.h>

#include <memory>
#include <string>

#include "src/comm/group_state.h"
#include "paisoar/error.h"
#include "src/comm/work_impl.h"

namespace paisoar::comm::detail {

// A contiguous tensor to hand to the backend in place of `out`; when that had to
// be a copy, `work` copies it back into `out` after every other step.
inline at::Tensor stage_output(const at::Tensor& out, WorkImpl& work) {
  if (out.is_contiguous()) return out;
  at::Tensor staged = out.contiguous();
  work.finally([out, staged]() mutable { out.copy_(staged); });
  return staged;
}

// The bytes of a contiguous tensor as a 1-D uint8 view (no copy).
inline at::Tensor byte_view(const at::Tensor& contiguous) {
  return contiguous.reshape({-1}).view(at::kByte);
}

// Calls `submit` (which issues a c10d collective) and turns a submission error
// (bad dtype, device, ...) into a CommError with the collective's context.
template <typename Submit>
C10dWorkPtr submit(const std::string& context, const GroupState& state, Submit&& fn) {
  try {
    return fn();
  } catch (const CommError&) {
    throw;
  } catch (const std::exception& e) {
    throw_comm_error(context, error_text(e), state.options.timeout);
  }
}

[[noreturn]] inline void invalid(const std::string& context, const std::string& what) {
  throw CommError(context + ": " + what, CommError::Cause::InvalidArgument);
}

}  // namespace paisoar::comm::detail
