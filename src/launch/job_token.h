// The job token: a secret shared by the launcher and its ranks. A process
// must present it as its first request to the rendezvous store before it may
// read or write anything there. Taken from PAISOAR_JOB_TOKEN, or made by the
// launcher of a single-node job. See docs/LAUNCH.md, "Rendezvous and the job
// token".
#pragma once

#include <string>
#include <string_view>

#include "launch/launch_options.h"

namespace paisoar::launch {

// The variable that carries the token to the launcher and to the ranks.
inline constexpr const char* kJobTokenVar = "PAISOAR_JOB_TOKEN";

// A fresh token: 32 hex digits (128 bits) from /dev/urandom. Throws
// std::runtime_error when /dev/urandom cannot be read.
std::string make_job_token();

// The token for this launcher run: `from_env` (the launcher's
// PAISOAR_JOB_TOKEN) when not empty, else a fresh one. With --nnodes > 1 the
// nodes must share it, so a missing one is a LaunchUsageError saying to
// export the same PAISOAR_JOB_TOKEN on every node; so is a token with
// characters other than printable ASCII, or longer than 1024 bytes.
std::string resolve_job_token(const LaunchOptions& options, const std::string& from_env);

// Compares in time independent of where the tokens differ.
bool tokens_equal(std::string_view a, std::string_view b);

}  // namespace paisoar::launch
