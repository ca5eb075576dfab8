// MemoryReport: where one rank's memory goes, measured: parameters, gradients
// and optimizer state (bytes of the tensors' storages, each storage counted
// once, so DDP's bucket views and flat buffers are not counted twice), the
// peak activation memory of a step (PeakMeter), the device allocator's
// current and peak bytes, and the process's resident memory. A formatter
// prints one line per rank for the profiler and the Trainer.
#pragma once

#include <torch/nn/module.h>
#include <torch/optim/optimizer.h>

#include <cstdint>
#include <string>
#include <vector>

#include "paisoar/memory/device_memory.h"

namespace paisoar::memory {

// Bytes of the distinct storages behind the defined tensors in `tensors`.
int64_t storage_bytes(const std::vector<torch::Tensor>& tensors);

int64_t parameter_bytes(const torch::nn::Module& model);
int64_t gradient_bytes(const torch::nn::Module& model);  // defined .grad()s only

// Bytes of `optimizer`'s per-parameter state tensors (momentum buffers, Adam's
// moments, ...). torch::optim's SGD, Adam, AdamW, Adagrad and RMSprop are read
// directly; other optimizers' states (LARS, LAMB, your own) are counted from
// what their serialize() writes, one parameter's state at a time. State kept
// outside state() (FlatOptimizer's flat buffers) is not seen: pass those
// tensors to storage_bytes yourself.
int64_t optimizer_state_bytes(const torch::optim::Optimizer& optimizer);

struct MemoryReport {
  int rank = 0;
  std::string device = "cpu";
  int64_t parameter_bytes = 0;
  int64_t gradient_bytes = 0;
  int64_t optimizer_state_bytes = 0;
  int64_t peak_activation_bytes = -1;  // from a PeakMeter around forward+backward; -1: not measured
  DeviceMemory allocator;              // the device allocator's view; -1s: not measured
  int64_t resident_bytes = -1;         // the whole process (all devices' host side)
};

// Fills everything but peak_activation_bytes, which only a meter around a step
// can measure. `optimizer` may be null (no state counted).
MemoryReport measure_memory(const torch::nn::Module& model, const torch::optim::Optimizer* optimizer,
                            c10::Device device = c10::Device(c10::DeviceType::CPU), int rank = 0);

// A table, one row per report, in MiB with "-" for what was not measured:
//   rank device  params   grads  optim  peak act  alloc cur  alloc peak  resident
std::string format_memory_reports(const std::vector<MemoryReport>& reports);

}  // namespace paisoar::memory
