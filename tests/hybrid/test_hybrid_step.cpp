// Hybrid parallelism end to end: one model split over data x pipeline x
// tensor ranks (threads over a HashStore), DDP across the data dimension in
// the pipeline's last backward; its loss and every gradient shard equal the
// single-process step on the whole batch, for several layouts and both
// schedules, over two steps (the reducer re-arms each step).
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <mutex>
#include <optional>

#include "paisoar/ddp/gradient_reducer.h"
#include "paisoar/hybrid.h"
#include "paisoar/pipeline.h"
#include "tests/hybrid/hybrid_testing.h"
#include "tests/pipeline/pipeline_testing.h"
#include "tests/support/thread_ranks.h"

namespace paisoar {
namespace {

using hybrid::HybridMesh;
using hybrid::ParallelLayout;

struct HybridCase {
  ParallelLayout layout;
  pipeline::Schedule schedule;
  int micro_batches;
};

std::string case_name(const ::testing::TestParamInfo<HybridCase>& info) {
  const auto& c = info.param;
  std::string name(1, 'D');
  name += std::to_string(c.layout.data);
  name += 'P';
  name += std::to_string(c.layout.pipeline);
  name += 'T';
  name += std::to_string(c.layout.tensor);
  name += '_';
  name += pipeline::to_string(c.schedule);
  name += "_M";
  name += std::to_string(c.micro_batches);
  return name;
}

class HybridStep : public ::testing::TestWithParam<HybridCase> {};

// fp32: the split sums partial products in another order than one process.
constexpr double kRtol = 1e-4, kAtol = 1e-5;
constexpr int64_t kRows = 16;

TEST_P(HybridStep, LossAndGradientsEqualTheSingleProcessStep) {
  const HybridCase c = GetParam();
  std::mutex seed_mutex;
  auto reference_model = paisoar::testing::seeded_model(seed_mutex, paisoar::testing::make_hybrid_reference, 7);
  torch::manual_seed(11);
  const torch::Tensor x = torch::randn({kRows, 8});
  const torch::Tensor y = torch::randint(0, 4, {kRows});
  const auto ref = paisoar::testing::reference_step(reference_model, x, y);
  const torch::Tensor ref_out = reference_model->forward(x).detach();

  paisoar::testing::run_ranks(c.layout.size(), [&](int, std::shared_ptr<comm::Communicator> world) {
    HybridMesh mesh(world, c.layout);
    // The split layers draw their (overwritten) initial values from the global
    // generator too: built under the same lock, so no rank perturbs another's seeded draws.
    auto model = paisoar::testing::seeded_model(seed_mutex, [&] {
      return paisoar::testing::make_hybrid_split(paisoar::testing::make_hybrid_reference(), mesh.tensor_group());
    }, 7);
    // Four layers, split as evenly as the stages allow.
    const std::vector<pipeline::LayerCost> costs(4, pipeline::LayerCost{"", 1.0, 0});
    const auto plan = pipeline::even_partition(costs, c.layout.pipeline);
    pipeline::PipelineOptions options;
    options.micro_batches = c.micro_batches;
    options.schedule = c.schedule;
    pipeline::Pipeline pipe(model, plan, mesh.pipeline_group(), paisoar::testing::pipeline_loss, options);
    // A stage without parameters (P = 4: the lone Tanh) has nothing to average.
    std::optional<ddp::GradientReducer> reducer;
    if (!pipe.parameters().empty()) {
      reducer.emplace(pipe.module().ptr(), mesh.data_group());
      hybrid::sync_in_last_backward(pipe, *reducer);
    }

    // This replica's contiguous share of the batch.
    const int64_t begin = kRows * mesh.data_rank() / c.layout.data;
    const int64_t end = kRows * (mesh.data_rank() + 1) / c.layout.data;
    for (int step = 0; step < 2; ++step) {
      pipe.module()->zero_grad();
      torch::Tensor loss = pipe.step(x.slice(0, begin, end), y.slice(0, begin, end));
      // The replicas' mean losses average to the whole batch's.
      torch::Tensor mean = loss.to(torch::kFloat).reshape({1});
      mesh.data_group()->allreduce(mean).wait();
      EXPECT_NEAR(mean.item<double>() / c.layout.data, ref.loss, 1e-5) << "step " << step;
      for (const auto& p : pipe.module()->named_parameters()) {
        const auto want = paisoar::testing::hybrid_shard(p.key(), ref.grads.at(p.key()), mesh.tensor_rank(),
                                                         c.layout.tensor);
        ASSERT_TRUE(p.value().grad().defined()) << p.key();
        EXPECT_TRUE(torch::allclose(p.value().grad(), want, kRtol, kAtol))
            << "step " << step << " " << p.key() << " max diff " << (p.value().grad() - want).abs().max().item<double>();
      }
    }
    // Forward only: the last stage's output is the whole model's.
    const torch::Tensor out = pipe.infer(x);
    if (pipe.is_last()) {
      EXPECT_TRUE(torch::allclose(out, ref_out, kRtol, kAtol)) << (out - ref_out).abs().max().item<double>();
    } else {
      EXPECT_FALSE(out.defined());
    }
  });
}

INSTANTIATE_TEST_SUITE_P(
    Layouts, HybridStep,
    ::testing::Values(HybridCase{{2, 2, 1}, pipeline::Schedule::OneFOneB, 4},
                      HybridCase{{2, 2, 1}, pipeline::Schedule::GPipe, 2},
                      HybridCase{{1, 2, 2}, pipeline::Schedule::OneFOneB, 4},
                      HybridCase{{2, 1, 2}, pipeline::Schedule::OneFOneB, 1},
                      HybridCase{{2, 2, 2}, pipeline::Schedule::OneFOneB, 2},
                      HybridCase{{1, 4, 1}, pipeline::Schedule::GPipe, 4}),
    case_name);

}  // namespace
}  // namespace paisoar
