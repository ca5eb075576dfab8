// Memory accounting, measured: the tracking CPU allocator against known
// allocations, parameter/gradient/optimizer-state bytes against the formulas
// (4 bytes per fp32 element; SGD momentum 1x, Adam 2x, LARS 1x the parameters),
// and the peak activation memory of a deep MLP with and without activation
// checkpointing (a memory measurement: deterministic, so asserted).
#include <c10/core/CPUAllocator.h>
#include <gtest/gtest.h>

#include <fstream>
#include <string>
#include <torch/torch.h>

#include "paisoar/memory.h"
#include "paisoar/optim/lars.h"
#include "tests/memory/deep_mlp.h"
#include "paisoar/version.h"
#include "tests/support/expect_error.h"

using namespace paisoar;

namespace {

int64_t current() { return memory::cpu_allocator_counts().current_bytes; }

TEST(TrackingAllocator, CountsKnownAllocationsAndTheirRelease) {
  // Made by the default allocator (when this test installs the tracker): never counted.
  auto before_install = memory::cpu_tracking_allocator_installed() ? torch::Tensor() : torch::empty({1000});
  memory::install_cpu_tracking_allocator();
  memory::install_cpu_tracking_allocator();  // idempotent
  ASSERT_TRUE(memory::cpu_tracking_allocator_installed());

  const int64_t start = current();
  const int64_t n = 123457;
  {
    auto t = torch::empty({n});
    EXPECT_EQ(current() - start, 4 * n);  // requested bytes: no alignment slack counted
    auto d = torch::empty({n}, torch::kDouble);
    EXPECT_EQ(current() - start, 12 * n);
    memory::reset_cpu_peak();
    EXPECT_EQ(memory::cpu_allocator_counts().peak_bytes, current());
  }
  EXPECT_EQ(current(), start);
  EXPECT_EQ(memory::cpu_allocator_counts().peak_bytes, start + 12 * n);
  before_install = torch::Tensor();  // freed by its own allocator
  EXPECT_EQ(current(), start);

  // A temporary: peak sees it, current does not keep it.
  memory::reset_cpu_peak();
  { auto tmp = torch::ones({n}) * 2; }
  EXPECT_GE(memory::cpu_allocator_counts().peak_bytes - start, 4 * n);
  EXPECT_EQ(current(), start);

  // GELU's kernel frees a default-allocator buffer through GetCPUAllocator()'s
  // raw deleter: handed to the wrapped allocator, counts unchanged.
  { auto y = torch::gelu(torch::randn({n})); }
  EXPECT_EQ(current(), start);

  // The raw interface (context == data, as with the default allocator).
  void* raw = c10::GetCPUAllocator()->raw_allocate(1000);
  EXPECT_EQ(current() - start, 1000);
  c10::GetCPUAllocator()->raw_deallocate(raw);
  EXPECT_EQ(current(), start);
}

TEST(TrackingAllocator, DeviceMemoryAndPeakMeterUseIt) {
  memory::install_cpu_tracking_allocator();
  const auto cpu = c10::Device(c10::DeviceType::CPU);
  EXPECT_EQ(memory::device_memory(cpu).current_bytes, current());
  memory::PeakMeter meter(cpu);
  { auto a = torch::empty({1000}); auto b = torch::empty({500}); }
  EXPECT_EQ(meter.peak_above_start(), 6000);
  EXPECT_GT(memory::resident_bytes(), 0);
}

// The CPU's available memory is /proc/meminfo's MemAvailable, the reader's
// own line (sysinfo's free RAM is not it: it leaves out the page cache).
TEST(DeviceMemory, TheCpusAvailableBytesAreMeminfosMemAvailable) {
  std::ifstream meminfo("/proc/meminfo");
  std::string line;
  int64_t kib = -1;
  while (std::getline(meminfo, line)) {
    if (line.rfind("MemAvailable:", 0) == 0) kib = std::stoll(line.substr(13));
  }
  ASSERT_GT(kib, 0);
  const int64_t bytes = memory::available_bytes(c10::Device(c10::DeviceType::CPU));
  EXPECT_NEAR(static_cast<double>(bytes), kib * 1024.0, 256.0 * 1024 * 1024);  // it moves between the two reads
}

TEST(MemoryReport, ParameterGradientAndOptimizerBytes) {
  torch::manual_seed(0);
  torch::nn::Sequential model(torch::nn::Linear(10, 20), torch::nn::Linear(20, 3));
  const int64_t params = (10 * 20 + 20 + 20 * 3 + 3);
  EXPECT_EQ(memory::parameter_bytes(*model), 4 * params);
  EXPECT_EQ(memory::gradient_bytes(*model), 0);
  auto step = [&](torch::optim::Optimizer& opt) {
    opt.zero_grad();
    model->forward(torch::randn({4, 10})).sum().backward();
    opt.step();
  };
  torch::optim::SGD sgd(model->parameters(), torch::optim::SGDOptions(0.1).momentum(0.9));
  EXPECT_EQ(memory::optimizer_state_bytes(sgd), 0);
  step(sgd);
  EXPECT_EQ(memory::gradient_bytes(*model), 4 * params);
  EXPECT_EQ(memory::optimizer_state_bytes(sgd), 4 * params);
  torch::optim::Adam adam(model->parameters());
  step(adam);
  EXPECT_EQ(memory::optimizer_state_bytes(adam), 8 * params);
  // Not a torch::optim type: counted from what its serialize() writes.
  optim::LARS lars(model->parameters(), optim::LARSOptions(0.1).momentum(0.9));
  step(lars);
  EXPECT_EQ(memory::optimizer_state_bytes(lars), 4 * params);

  // Views of one storage count once (DDP's gradients are views of buckets).
  auto flat = torch::zeros({100});
  EXPECT_EQ(memory::storage_bytes({flat.narrow(0, 0, 50), flat.narrow(0, 50, 50), flat}), 400);

  auto report = memory::measure_memory(*model, &adam);
  EXPECT_EQ(report.parameter_bytes, 4 * params);
  EXPECT_EQ(report.optimizer_state_bytes, 8 * params);
  report.peak_activation_bytes = 3 * 1024 * 1024;
  const auto table = memory::format_memory_reports({report});
  EXPECT_NE(table.find("peak act"), std::string::npos) << table;
  EXPECT_NE(table.find("3.0"), std::string::npos) << table;
}

// CUDA statistics where they cannot be had: a CPU build says how to get a
// CUDA one; a CUDA build on a machine without a GPU says none is visible.
TEST(MemoryReport, CudaWithoutAGpuIsAClearError) {
  if (torch::cuda::is_available()) GTEST_SKIP() << "a GPU is visible (tests/cuda covers it)";
  paisoar::testing::expect_error([] { memory::device_memory(c10::Device(c10::DeviceType::CUDA, 0)); },
                                 {PAISOAR_BUILT_WITH_CUDA ? "no CUDA device is visible" : "PAISOAR_CUDA"});
}

// Peak bytes above the step's start for one forward+backward of `run`.
template <typename Run>
int64_t peak_of_step(torch::nn::Module& model, const torch::Tensor& input, Run run) {
  paisoar::testing::zero_grads(model);
  memory::PeakMeter meter;
  run(input).square().mean().backward();
  return meter.peak_above_start();
}

TEST(MemoryReport, CheckpointingLowersPeakActivationMemoryOfADeepMlp) {
  memory::install_cpu_tracking_allocator();
  torch::manual_seed(5);
  // 16 blocks; each keeps a 256 x 256 and a 256 x 64 activation for backward
  // (320 KiB); checkpointed, only its 256 x 64 input (64 KiB) until backward
  // recomputes it. Gradients (16 x 129 KiB) are allocated in both runs.
  auto model = paisoar::testing::deep_mlp(16, 64);
  auto input = torch::randn({256, 64});
  const int64_t plain = peak_of_step(*model, input, [&](const torch::Tensor& x) { return model->forward(x); });
  auto wrapped = memory::CheckpointPolicy({"*"}).apply(model);
  const int64_t ckpt = peak_of_step(*model, input, [&](const torch::Tensor& x) { return wrapped->forward(x); });
  std::cout << "peak above step start: plain " << plain / 1024 << " KiB, checkpointed "
            << ckpt / 1024 << " KiB\n";
  // About 5 MiB + gradients without, about 1 MiB + gradients with (measured
  // 0.53x); the bound leaves room for allocation-order differences.
  EXPECT_LT(ckpt, plain * 6 / 10);
  EXPECT_GT(ckpt, 0);
}

}  // namespace
