// Counting the bytes of parameters, gradients and optimizer state, and the
// memory table.
#include "paisoar/memory/memory_report.h"

#include <torch/optim/adagrad.h>
#include <torch/optim/adam.h>
#include <torch/optim/adamw.h>
#include <torch/optim/rmsprop.h>
#include <torch/optim/sgd.h>
#include <torch/serialize/input-archive.h>
#include <torch/serialize/output-archive.h>

#include <cstdio>
#include <sstream>
#include <unordered_set>

namespace paisoar::memory {
namespace {

// The state tensors of torch::optim's own state types, without copying; false
// for other types.
bool known_state_tensors(const torch::optim::OptimizerParamState& s, std::vector<torch::Tensor>& out) {
  using namespace torch::optim;
  if (auto* p = dynamic_cast<const SGDParamState*>(&s)) {
    out.push_back(p->momentum_buffer());
  } else if (auto* p = dynamic_cast<const AdamParamState*>(&s)) {
    out.insert(out.end(), {p->exp_avg(), p->exp_avg_sq(), p->max_exp_avg_sq()});
  } else if (auto* p = dynamic_cast<const AdamWParamState*>(&s)) {
    out.insert(out.end(), {p->exp_avg(), p->exp_avg_sq(), p->max_exp_avg_sq()});
  } else if (auto* p = dynamic_cast<const AdagradParamState*>(&s)) {
    out.push_back(p->sum());
  } else if (auto* p = dynamic_cast<const RMSpropParamState*>(&s)) {
    out.insert(out.end(), {p->square_avg(), p->momentum_buffer(), p->grad_avg()});
  } else {
    return false;
  }
  return true;
}

// Bytes of the tensors one state's serialize() writes (read back from bytes:
// an OutputArchive cannot be inspected), so only one parameter's state is
// copied at a time.
int64_t serialized_state_bytes(const torch::optim::OptimizerParamState& s) {
  torch::serialize::OutputArchive out;
  s.serialize(out);
  std::ostringstream bytes;
  out.save_to(bytes);
  std::istringstream in(bytes.str());
  torch::serialize::InputArchive archive;
  archive.load_from(in);
  int64_t total = 0;
  for (const auto& key : archive.keys()) {
    c10::IValue value;
    if (archive.try_read(key, value) && value.isTensor()) total += value.toTensor().nbytes();
  }
  return total;
}

std::string mib(int64_t bytes) {
  if (bytes < 0) return "-";
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f", static_cast<double>(bytes) / (1024.0 * 1024.0));
  return buf;
}

}  // namespace

int64_t storage_bytes(const std::vector<torch::Tensor>& tensors) {
  std::unordered_set<const void*> seen;
  int64_t total = 0;
  for (const auto& t : tensors) {
    if (!t.defined() || !t.has_storage()) continue;
    const auto& storage = t.storage();
    const void* key = storage.unsafeGetStorageImpl();
    if (seen.insert(key).second) total += static_cast<int64_t>(storage.nbytes());
  }
  return total;
}

int64_t parameter_bytes(const torch::nn::Module& model) { return storage_bytes(model.parameters()); }

int64_t gradient_bytes(const torch::nn::Module& model) {
  std::vector<torch::Tensor> grads;
  for (const auto& p : model.parameters()) grads.push_back(p.grad());
  return storage_bytes(grads);
}

int64_t optimizer_state_bytes(const torch::optim::Optimizer& optimizer) {
  std::vector<torch::Tensor> tensors;
  int64_t serialized = 0;
  for (const auto& entry : optimizer.state()) {
    if (!known_state_tensors(*entry.second, tensors)) serialized += serialized_state_bytes(*entry.second);
  }
  return storage_bytes(tensors) + serialized;
}

MemoryReport measure_memory(const torch::nn::Module& model, const torch::optim::Optimizer* optimizer,
                            c10::Device device, int rank) {
  MemoryReport r;
  r.rank = rank;
  r.device = device.str();
  r.parameter_bytes = parameter_bytes(model);
  r.gradient_bytes = gradient_bytes(model);
  r.optimizer_state_bytes = optimizer ? optimizer_state_bytes(*optimizer) : 0;
  r.allocator = device_memory(device);
  r.resident_bytes = resident_bytes();
  return r;
}

std::string format_memory_reports(const std::vector<MemoryReport>& reports) {
  std::ostringstream out;
  char line[256];
  std::snprintf(line, sizeof line, "%-5s %-7s %10s %10s %10s %10s %10s %10s %10s\n", "rank", "device",
                "params", "grads", "optim", "peak act", "alloc cur", "alloc peak", "resident");
  out << "memory (MiB; - = not measured)\n" << line;
  for (const auto& r : reports) {
    std::snprintf(line, sizeof line, "%-5d %-7s %10s %10s %10s %10s %10s %10s %10s\n", r.rank,
                  r.device.c_str(), mib(r.parameter_bytes).c_str(), mib(r.gradient_bytes).c_str(),
                  mib(r.optimizer_state_bytes).c_str(), mib(r.peak_activation_bytes).c_str(),
                  mib(r.allocator.current_bytes).c_str(), mib(r.allocator.peak_bytes).c_str(),
                  mib(r.resident_bytes).c_str());
    out << line;
  }
  return out.str();
}

}  // namespace paisoar::memory
