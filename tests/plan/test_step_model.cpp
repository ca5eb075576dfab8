// The cost model against the formulas it stands for, on layers and lines
// given by hand: compute is the layers' sum (times the contention), DDP's one
// bucket is exposed whole after backward, a uniform 1F1B pipeline's bubble is
// (P - 1) micro-batch times, ZeRO-3's first gather is exposed before the
// first layer, ZeRO 1-3 divide what they shard by the data ranks.
#include <gtest/gtest.h>

#include "paisoar/plan/step_model.h"

namespace paisoar {
namespace {

constexpr double kMs = 1e-3;

pipeline::LayerCost layer(double forward_ms, double backward_ms, int64_t params, int64_t activations = 1000) {
  pipeline::LayerCost c;
  c.forward_s = forward_ms * kMs;
  c.time_s = (forward_ms + backward_ms) * kMs;
  c.parameter_bytes = params;
  c.activation_bytes = activations;
  c.output_bytes = 100;
  c.memory_bytes = 2 * params + activations;
  return c;
}

plan::CostInputs inputs(std::vector<pipeline::LayerCost> layers, int64_t rows) {
  plan::CostInputs in;
  in.global_batch = 64;
  in.layers_at_rows[rows] = std::move(layers);
  for (int g : {2, 4}) {
    for (plan::Collective op : {plan::Collective::Allreduce, plan::Collective::Allgather,
                                plan::Collective::ReduceScatter, plan::Collective::Send}) {
      in.comm.set(op, g, {0, 0});
    }
  }
  in.state_per_parameter = 1;
  return in;
}

TEST(StepModel, DataParallelComputeIsTheLayersAndOneBucketIsExposedWhole) {
  plan::CostInputs in = inputs({layer(1, 2, 512 << 10), layer(1, 2, 512 << 10)}, 32);
  in.comm.set(plan::Collective::Allreduce, 2, {1 * kMs, 1e-9});  // 1 ms + 1 ns per byte
  in.optimizer_s_per_byte = 1e-9;
  const plan::LayoutChoice ddp{{2, 1, 1}, 0, 1, false};
  const plan::StepPrediction p = plan::predict_step(ddp, in);
  EXPECT_NEAR(p.compute_ms, 6.0, 1e-9);
  EXPECT_NEAR(p.exposed_comm_ms, 1.0 + 1e-6 * (1 << 20), 1e-9) << "the 1 MiB bucket fills at backward's end";
  EXPECT_NEAR(p.optimizer_ms, 1e-6 * (1 << 20), 1e-9);
  EXPECT_NEAR(p.bubble_ms, 0, 1e-12);

  in.contention = 2;
  EXPECT_NEAR(plan::predict_step(ddp, in).optimizer_ms, 2e-6 * (1 << 20), 1e-9) << "ranks sharing cores step slower";
  EXPECT_NEAR(plan::predict_step(ddp, in).compute_ms, 6.0, 1e-9) << "the layers were measured under the load";
  const plan::LayoutChoice twice{{2, 1, 1}, 0, 2, true};
  in.contention = 1;
  in.layers_at_rows[16] = in.layers_at_rows[32];
  // two micro-batches, each forward, backward and the forward again
  EXPECT_NEAR(plan::predict_step(twice, in).compute_ms, 2 * (2 + 4 + 2), 1e-9);
}

TEST(StepModel, AUniformOneFOneBPipelineIdlesForPMinusOneMicroBatches) {
  plan::CostInputs in = inputs({layer(1, 2, 0), layer(1, 2, 0), layer(1, 2, 0), layer(1, 2, 0)}, 8);
  in.pipeline_op_s = 0;
  for (int64_t micro : {2, 4, 8}) {
    in.layers_at_rows[64 / micro] = in.layers_at_rows[8];
    const plan::StepPrediction p = plan::predict_step({{1, 2, 1}, 0, micro, false}, in);
    EXPECT_NEAR(p.compute_ms, micro * 6.0, 1e-9);
    EXPECT_NEAR(p.bubble_ms, 6.0, 1e-9) << micro << " micro-batches";
    EXPECT_EQ(p.stage_bounds, (std::vector<int>{0, 2, 4}));
  }
}

TEST(StepModel, ZeroThreeWaitsForTheFirstGatherAndHidesTheNext) {
  plan::CostInputs in = inputs({layer(4, 8, 1000), layer(4, 8, 1000)}, 32);
  in.comm.set(plan::Collective::Allgather, 2, {3 * kMs, 0});  // each gather 3 ms, shorter than a layer's 4
  const plan::StepPrediction p = plan::predict_step({{2, 1, 1}, 3, 1, false}, in);
  // forward: 3 ms before layer 0; the next gather hides under it. Backward:
  // layer 1's gather (3 ms, issued at its start), layer 0's hidden under layer 1.
  EXPECT_NEAR(p.compute_ms, 24.0, 1e-9);
  EXPECT_NEAR(p.exposed_comm_ms, 6.0, 1e-9);
}

TEST(StepModel, ZeroStagesDivideWhatTheyShardByTheDataRanks) {
  plan::CostInputs in = inputs({layer(1, 1, 4000, 0), layer(1, 1, 4000, 0)}, 16);
  in.state_per_parameter = 2;  // adamw
  auto peak = [&](int stage) { return plan::predict_step({{4, 1, 1}, stage, 1, false}, in); };
  EXPECT_EQ(peak(0).optimizer_state_bytes, 16000);
  EXPECT_EQ(peak(1).optimizer_state_bytes, 4000);
  EXPECT_EQ(peak(1).gradient_bytes, 8000);
  EXPECT_EQ(peak(2).gradient_bytes, 2000 + 4000) << "a shard, and one layer's full gradient in flight";
  EXPECT_EQ(peak(2).parameter_bytes, 8000);
  EXPECT_EQ(peak(3).parameter_bytes, 2000 + 2 * 4000) << "a shard, one layer gathered and the next prefetched";
}

TEST(StepModel, ATensorParallelLayoutTakesTheTimesOfItsOwnLayersAndTheSplitsBytes) {
  plan::CostInputs in = inputs({layer(1, 2, 4000, 800), layer(1, 2, 0, 800)}, 64);
  in.tensor_split[2] = {2.0, 1.0};  // the first layer split in two, the second replicated
  in.tensor_layers[2][64] = {layer(3, 4, 2000), layer(1, 2, 0)};  // as the shard ranks ran them, collectives in
  const plan::StepPrediction p = plan::predict_step({{1, 1, 2}, 0, 1, false}, in);
  EXPECT_NEAR(p.compute_ms, 3 + 4 + 1 + 2, 1e-9);
  EXPECT_EQ(p.parameter_bytes, 2000);
  EXPECT_EQ(p.optimizer_state_bytes, 2000);
  in.tensor_layers.clear();
  EXPECT_THROW(plan::predict_step({{1, 1, 2}, 0, 1, false}, in), c10::Error) << "a width not measured is named";
}

TEST(StepModel, AMissingMeasurementIsNamed) {
  const plan::CostInputs in = inputs({layer(1, 1, 10)}, 32);
  try {
    plan::predict_step({{2, 1, 1}, 0, 2, false}, in);  // 16 rows were not measured
    FAIL();
  } catch (const c10::Error& e) {
    EXPECT_NE(std::string(e.what()).find("16 rows"), std::string::npos);
  }
}

TEST(CommCosts, FitLineIsExactOnALineAndNeverNegative) {
  const plan::LineFit fit = plan::fit_line({{1000, 2e-6 + 1000e-9}, {5000, 2e-6 + 5000e-9}, {9000, 2e-6 + 9000e-9}});
  EXPECT_NEAR(fit.latency_s, 2e-6, 1e-12);
  EXPECT_NEAR(fit.seconds_per_byte, 1e-9, 1e-15);
  const plan::LineFit down = plan::fit_line({{1, 5}, {2, 1}});
  EXPECT_GE(down.seconds_per_byte, 0);
  EXPECT_GE(down.latency_s, 0);
}

}  // namespace
}  // namespace paisoar
