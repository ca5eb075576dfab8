// begin_collective: numbers each collective and, in checking mode, compares
// every rank's call (op, dtype, shape, root) with one small allgather first.
#include <ATen/ATen.h>

#include <array>
#include <sstream>

#include "src/comm/group_state.h"
#include "paisoar/error.h"

namespace paisoar::comm::detail {
namespace {

constexpr int kMaxDims = 4;
// op hash, arg, dtype, numel, ndim, dims[kMaxDims]
using Signature = std::array<int64_t, 5 + kMaxDims>;

int64_t hash_op(const char* op) {
  int64_t h = 1469598103934665603LL;
  for (const char* p = op; *p; ++p) h = (h ^ *p) * 1099511628211LL;
  return h;
}

Signature signature_of(const char* op, const at::Tensor& tensor, int64_t arg) {
  Signature sig{};
  sig[0] = hash_op(op);
  sig[1] = arg;
  sig[2] = tensor.defined() ? static_cast<int64_t>(tensor.scalar_type()) : -1;
  sig[3] = tensor.defined() ? tensor.numel() : 0;
  sig[4] = tensor.defined() ? tensor.dim() : 0;
  for (int d = 0; d < kMaxDims && tensor.defined() && d < tensor.dim(); ++d) {
    sig[5 + d] = tensor.size(d);
  }
  return sig;
}

std::string render(const Signature& sig, const char* own_op, int64_t own_hash) {
  std::ostringstream out;
  out << (sig[0] == own_hash ? own_op : "a different operation");
  if (sig[2] >= 0) {
    out << " of " << c10::toString(static_cast<c10::ScalarType>(sig[2])) << "[";
    for (int64_t d = 0; d < sig[4]; ++d) {
      out << (d ? "," : "") << (d < kMaxDims ? std::to_string(sig[5 + d]) : "...");
    }
    out << "] (" << sig[3] << " elements)";
  }
  out << " arg=" << sig[1];
  return out.str();
}

}  // namespace

std::string begin_collective(GroupState& state, const char* op, const at::Tensor& tensor,
                             int64_t arg) {
  ++state.issued;
  std::string context = state.describe(op);
  if (!state.options.check_collectives || state.size == 1) return context;

  Signature own = signature_of(op, tensor, arg);
  auto input = at::from_blob(own.data(), {static_cast<int64_t>(own.size())}, at::kLong).clone();
  auto all = at::empty({state.size, static_cast<int64_t>(own.size())}, at::kLong);
  std::vector<std::vector<at::Tensor>> outputs{{}};
  for (int r = 0; r < state.size; ++r) outputs[0].push_back(all[r]);
  std::vector<at::Tensor> inputs{input};
  try {
    ::c10d::AllgatherOptions opts;
    opts.timeout = state.options.timeout;
    state.cpu->allgather(outputs, inputs, opts)->wait();
  } catch (const std::exception& e) {
    throw_comm_error(context + " (argument check)", error_text(e), state.options.timeout);
  }
  auto rows = all.accessor<int64_t, 2>();
  for (int r = 0; r < state.size; ++r) {
    Signature theirs{};
    for (size_t i = 0; i < theirs.size(); ++i) theirs[i] = rows[r][i];
    if (theirs != own) {
      throw CommError(context + " does not match rank " + std::to_string(r) +
                          ": this rank called " + render(own, op, own[0]) + ", rank " +
                          std::to_string(r) + " called " + render(theirs, op, own[0]) +
                          ".\n  likely cause: mismatched collectives; every rank must issue "
                          "the same collectives in the same order with the same shapes",
                      CommError::Cause::Mismatch);
    }
  }
  return context;
}

}  // namespace paisoar::comm::detail
