// The CUDA variant on a GPU: CUDA autocast (fp16, bf16), the GradScaler on
// CUDA gradients, CUDA memory statistics, pinned loader batches, device-side
// preprocessing, DDP's buckets on CUDA tensors, and NCCL's native collectives
// (one rank: one GPU cannot hold two NCCL ranks). Every test skips, saying
// why, where no GPU is visible; scripts/gpu_check.sh runs them on one.
#include <gtest/gtest.h>
#include <torch/cuda.h>
#include <torch/torch.h>

#include <torch/csrc/distributed/c10d/HashStore.hpp>

#include "paisoar/amp.h"
#include "paisoar/comm.h"
#include "paisoar/data/data_loader.h"
#include "paisoar/data/device_preprocess.h"
#include "paisoar/ddp.h"
#include "paisoar/memory/device_memory.h"
#include "src/comm/backend.h"

namespace {

using namespace paisoar;

#define REQUIRE_GPU()                                                                        \
  if (!torch::cuda::is_available())                                                          \
  GTEST_SKIP() << "needs a CUDA device (none is visible here); scripts/gpu_check.sh runs "  \
                  "this suite on a GPU machine"

const torch::Device kGpu(torch::kCUDA, 0);

TEST(CudaAutocast, LinearRunsInTheLowPrecisionAndBackInFp32) {
  REQUIRE_GPU();
  auto linear = torch::nn::Linear(8, 4);
  linear->to(kGpu);
  auto x = torch::randn({3, 8}, kGpu);
  for (auto dtype : {torch::kHalf, torch::kBFloat16}) {
    amp::AutocastOptions o;
    o.device = c10::DeviceType::CUDA;
    o.dtype = dtype;
    torch::Tensor low, reference = linear(x);
    {
      amp::autocast guard(o);
      EXPECT_TRUE(amp::is_autocast_enabled(c10::DeviceType::CUDA));
      low = linear(x);
    }
    EXPECT_EQ(low.scalar_type(), dtype);
    EXPECT_EQ(linear(x).scalar_type(), torch::kFloat);
    // One low-precision rounding of inputs and weights: within 2% of fp32.
    EXPECT_TRUE(torch::allclose(low.to(torch::kFloat), reference, 2e-2, 2e-2));
  }
}

TEST(CudaGradScaler, UnscalesCudaGradientsAndSkipsAnInfStep) {
  REQUIRE_GPU();
  auto w = torch::ones({4}, torch::TensorOptions(kGpu).requires_grad(true));
  torch::optim::SGD sgd({w}, 0.5);
  amp::GradScalerOptions o;
  o.init_scale = 1024;
  amp::GradScaler scaler(o);
  scaler.scale((w * 3).sum()).backward();  // grad 3 * 1024
  EXPECT_TRUE(scaler.step(sgd));
  scaler.update();
  EXPECT_TRUE(torch::allclose(w.cpu(), torch::full({4}, 1.0 - 0.5 * 3)));
  sgd.zero_grad();
  scaler.scale((w * std::numeric_limits<float>::infinity()).sum()).backward();
  const auto before = w.detach().cpu();
  EXPECT_FALSE(scaler.step(sgd));  // skipped
  scaler.update();
  EXPECT_TRUE(torch::equal(w.detach().cpu(), before));
  EXPECT_EQ(scaler.get_scale(), 512);
}

TEST(CudaMemory, CountsTheCachingAllocatorsBytes) {
  REQUIRE_GPU();
  const auto before = memory::device_memory(kGpu);
  auto t = torch::empty({1 << 20}, torch::TensorOptions(kGpu).dtype(torch::kFloat));
  const auto during = memory::device_memory(kGpu);
  EXPECT_GE(during.current_bytes - before.current_bytes, int64_t{4} << 20);
  EXPECT_GE(during.peak_bytes, during.current_bytes);
  EXPECT_GE(during.reserved_bytes, during.current_bytes);
}

class Ramp : public data::Dataset {
 public:
  int64_t size() const override { return 16; }
  data::Example get(int64_t index, data::SampleRng&) const override {
    return {torch::full({3, 4, 4}, static_cast<int>(index * 10), torch::kUInt8), index % 2};
  }
  int64_t num_classes() const override { return 2; }
  std::string describe(int64_t index) const override { return "ramp " + std::to_string(index); }
};

TEST(CudaLoader, PinnedBatchesAndDevicePreprocessingMatchTheCpu) {
  REQUIRE_GPU();
  data::DataLoaderOptions o;
  o.batch_size = 8;
  o.workers = 2;
  o.pin_memory = true;
  data::DataLoader loader(std::make_shared<Ramp>(), o);
  auto batch = loader.next();
  ASSERT_TRUE(batch.has_value());
  EXPECT_TRUE(batch->data.is_pinned());
  data::DevicePreprocessOptions p;
  p.mean = {0.5f, 0.4f, 0.3f};
  p.std = {0.2f, 0.3f, 0.4f};
  p.horizontal_flip = 0.5;
  p.seed = 3;
  auto on_cpu = data::DevicePreprocess(p)(*batch);
  p.device = kGpu;
  auto on_gpu = data::DevicePreprocess(p)(*batch);
  EXPECT_TRUE(on_gpu.is_cuda());
  EXPECT_TRUE(torch::allclose(on_gpu.cpu(), on_cpu, 1e-6, 1e-6));
}

TEST(CudaDdp, OneRankStepEqualsThePlainStep) {
  REQUIRE_GPU();
  auto comm = comm::Communicator::create(comm::Store::hash(), 0, 1);
  torch::manual_seed(0);
  auto plain = torch::nn::Sequential(torch::nn::Linear(16, 32), torch::nn::ReLU(), torch::nn::Linear(32, 4));
  auto wrapped = torch::nn::Sequential(torch::nn::Linear(16, 32), torch::nn::ReLU(), torch::nn::Linear(32, 4));
  for (size_t i = 0; i < plain->parameters().size(); ++i) {
    torch::NoGradGuard no_grad;
    wrapped->parameters()[i].copy_(plain->parameters()[i]);
  }
  plain->to(kGpu);
  wrapped->to(kGpu);
  DistributedDataParallel<torch::nn::Sequential> ddp(wrapped, comm);
  torch::optim::SGD a(plain->parameters(), 0.1), b(wrapped->parameters(), 0.1);
  for (int step = 0; step < 3; ++step) {
    auto x = torch::randn({8, 16}, kGpu);
    a.zero_grad();
    plain->forward(x).square().mean().backward();
    a.step();
    b.zero_grad();
    ddp(x).square().mean().backward();
    b.step();
  }
  for (size_t i = 0; i < plain->parameters().size(); ++i) {
    EXPECT_TRUE(torch::allclose(plain->parameters()[i].cpu(), wrapped->parameters()[i].cpu(), 1e-6, 1e-6));
  }
}

TEST(CudaNccl, NativeCollectivesOnOneRank) {
  REQUIRE_GPU();
  c10::intrusive_ptr<::c10d::Store> store = c10::make_intrusive<::c10d::HashStore>();
  auto nccl = comm::detail::make_nccl_group(store, 0, 1, std::chrono::seconds(60));
  auto t = torch::arange(8, torch::TensorOptions(kGpu).dtype(torch::kFloat));
  std::vector<torch::Tensor> v{t.clone()};
  nccl->allreduce(v)->wait();
  EXPECT_TRUE(torch::equal(v[0].cpu(), t.cpu()));
  auto out = torch::empty_like(t);
  auto in = t.clone();
  ::c10d::ReduceScatterOptions rs;
  rs.reduceOp = ::c10d::ReduceOp::AVG;
  nccl->_reduce_scatter_base(out, in, rs)->wait();
  EXPECT_TRUE(torch::equal(out.cpu(), t.cpu()));
  auto gathered = torch::empty_like(t);
  nccl->_allgather_base(gathered, in)->wait();
  EXPECT_TRUE(torch::equal(gathered.cpu(), t.cpu()));
  auto bf = t.to(torch::kBFloat16);
  std::vector<torch::Tensor> bv{bf};
  nccl->allreduce(bv)->wait();
  EXPECT_TRUE(torch::equal(bv[0].cpu(), t.to(torch::kBFloat16).cpu()));
}

}  // namespace
