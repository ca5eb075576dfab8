// Turns what c10d/Gloo/NCCL report into a CommError that names the likely cause
// and what to do next.
#include <string>

#include "src/comm/group_state.h"

namespace paisoar::comm::detail {
namespace {

bool contains(const std::string& text, const char* needle) {
  return text.find(needle) != std::string::npos;
}

}  // namespace

void throw_comm_error(const std::string& context, const std::string& what,
                      std::chrono::milliseconds timeout) {
  using Cause = CommError::Cause;
  Cause cause = Cause::Other;
  std::string hint;
  if (contains(what, "imed out") || contains(what, "imeout")) {
    cause = Cause::Timeout;
    hint = "timed out after " + std::to_string(timeout.count()) +
           " ms: a peer rank did not join this collective. It may be stuck or much slower "
           "(data loading, a long step), have exited, or be issuing collectives in a different "
           "order; rerun with PAISOAR_CHECK_COLLECTIVES=1 to compare every rank's calls";
  } else if (contains(what, "losed by peer") || contains(what, "reset by peer") ||
             contains(what, "Broken pipe") || contains(what, "onnection refused") ||
             contains(what, "ECONNRESET") || contains(what, "EPIPE")) {
    cause = Cause::PeerDied;
    hint = "a peer rank exited or crashed (its connection closed); the first error is in "
           "the other ranks' output";
  } else if (contains(what, "ize mismatch") || contains(what, "must have same") ||
             contains(what, "op.preamble.length") || contains(what, "nbytes")) {
    cause = Cause::Mismatch;
    hint = "the ranks passed different arguments (dtype, shape or root); rerun with "
           "PAISOAR_CHECK_COLLECTIVES=1 to see each rank's call";
  } else {
    hint = "see the message above; if a peer failed first, its output names the cause";
  }
  throw CommError(context + " failed: " + what + "\n  likely cause: " + hint, cause);
}

}  // namespace paisoar::comm::detail
