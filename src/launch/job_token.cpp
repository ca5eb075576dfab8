// make_job_token, resolve_job_token, tokens_equal.
#include "launch/job_token.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <stdexcept>

#include "launch/unique_fd.h"

namespace paisoar::launch {
namespace {

constexpr std::size_t kMaxTokenBytes = 1024;

std::string export_hint() {
  return std::string("export the same ") + kJobTokenVar + " on every node before starting its "
         "launcher, e.g. run `export " + kJobTokenVar + "=$(od -An -N16 -tx1 /dev/urandom | "
         "tr -d ' \\n')` once and use that value everywhere.";
}

}  // namespace

std::string make_job_token() {
  UniqueFd fd(::open("/dev/urandom", O_RDONLY | O_CLOEXEC));
  unsigned char bytes[16];
  std::size_t got = 0;
  while (fd && got < sizeof(bytes)) {
    const ssize_t n = ::read(fd.get(), bytes + got, sizeof(bytes) - got);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    got += static_cast<std::size_t>(n);
  }
  if (got < sizeof(bytes)) {
    throw std::runtime_error(std::string("paisoar launch: cannot read /dev/urandom to make a job "
                                         "token (") + std::strerror(errno) + "); set " +
                             kJobTokenVar + " yourself.");
  }
  static const char kHex[] = "0123456789abcdef";
  std::string token;
  for (unsigned char b : bytes) {
    token.push_back(kHex[b >> 4]);
    token.push_back(kHex[b & 0xf]);
  }
  return token;
}

std::string resolve_job_token(const LaunchOptions& options, const std::string& from_env) {
  if (from_env.empty()) {
    if (options.nnodes > 1) {
      throw LaunchUsageError("paisoar launch: --nnodes " + std::to_string(options.nnodes) +
                             " needs a job token that every node knows, and " + kJobTokenVar +
                             " is not set: " + export_hint());
    }
    return make_job_token();
  }
  if (from_env.size() > kMaxTokenBytes) {
    throw LaunchUsageError(std::string("paisoar launch: ") + kJobTokenVar + " is " +
                           std::to_string(from_env.size()) + " bytes long; use at most " +
                           std::to_string(kMaxTokenBytes) + " (32 hex digits are plenty).");
  }
  for (char c : from_env) {
    if (c < 0x21 || c > 0x7e) {
      throw LaunchUsageError(std::string("paisoar launch: ") + kJobTokenVar +
                             " holds a space, control or non-ASCII character; use printable "
                             "ASCII, e.g. hex digits.");
    }
  }
  return from_env;
}

bool tokens_equal(std::string_view a, std::string_view b) {
  unsigned char diff = a.size() == b.size() ? 0 : 1;
  const std::size_t n = a.size() < b.size() ? a.size() : b.size();
  for (std::size_t i = 0; i < n; ++i) diff |= static_cast<unsigned char>(a[i] ^ b[i]);
  return diff == 0;
}

}  // namespace paisoar::launch
