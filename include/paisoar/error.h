// paisoar's error policy, in one place. The library raises LibTorch's
// c10::Error family, as LibTorch itself does, so a caller (and the Python
// front end, which maps them to ValueError, RuntimeError, ...) catches one
// family:
//   - bad input at the public API (an option, a config key, an argument):
//     c10::ValueError, through TORCH_CHECK_VALUE(cond, ...) or
//     C10_THROW_ERROR(ValueError, msg);
//   - a failure while running (a file, a peer, a damaged checkpoint):
//     c10::Error, through TORCH_CHECK(cond, ...) or C10_THROW_ERROR(Error, msg);
//   - the few errors a caller tells apart derive from those: ConfigError
//     (ValueError), comm::CommError (DistBackendError), data::DataError and
//     NonFiniteLossError (Error).
// Every message starts with the component that raised it ("Trainer: ...",
// "safetensors: ...") or, for a parsed name or environment variable, with that
// input ("unknown pipeline schedule 'x'", "MASTER_PORT=..."), and ends with
// what to do. Internal invariants are
// TORCH_INTERNAL_ASSERT. The launcher (src/launch) links no LibTorch and keeps
// std exceptions inside its own program.
#pragma once

#include <c10/util/Exception.h>

#include <exception>
#include <string>

namespace paisoar {

// The text a user reads: c10::Error's message without the source location and
// C++ backtrace that what() appends; what() for any other exception.
inline std::string error_text(const std::exception& e) {
  const auto* c10_error = dynamic_cast<const c10::Error*>(&e);
  return c10_error != nullptr ? c10_error->what_without_backtrace() : e.what();
}

}  // namespace paisoar
