// The measurements behind `paisoar bench pipeline` (see pipeline_runs.h): each
// builds its model once, then runs Pipeline steps on rank threads and keeps
// every rank's PipelineStepStats per step.
#include "bench/pipeline_runs.h"

#include <torch/torch.h>

#include <algorithm>
#include <chrono>
#include <optional>
#include <thread>

#include "bench/measure_pair.h"
#include "bench/pipeline_measure.h"
#include "paisoar/memory.h"
#include "paisoar/pipeline.h"
#include "tests/support/thread_ranks.h"

namespace paisoar::bench {
namespace {

namespace pp = pipeline;
using StepStats = std::vector<pp::PipelineStepStats>;  // one step, one entry per stage

void sleep_ms(double ms) {
  if (ms > 0) std::this_thread::sleep_for(std::chrono::duration<double, std::milli>(ms));
}

// An ideal device: forward sleeps `ms`, backward 2 x `ms`.
struct Sleep : torch::autograd::Function<Sleep> {
  static torch::Tensor forward(torch::autograd::AutogradContext* ctx, torch::Tensor x, double ms) {
    ctx->saved_data["ms"] = ms;
    sleep_ms(ms);
    return x.clone();
  }
  static torch::autograd::tensor_list backward(torch::autograd::AutogradContext* ctx,
                                               torch::autograd::tensor_list grads) {
    sleep_ms(2 * ctx->saved_data["ms"].toDouble());
    return {grads[0], torch::Tensor()};
  }
};

struct SleepLayerImpl : torch::nn::Module {
  explicit SleepLayerImpl(double forward_ms) : ms(forward_ms) { w = register_parameter("w", torch::ones({1})); }
  torch::Tensor forward(torch::Tensor x) { return Sleep::apply(x * w, ms); }
  double ms;
  torch::Tensor w;
};
TORCH_MODULE(SleepLayer);

torch::Tensor square_loss(const torch::Tensor& out, const torch::Tensor&) { return out.square().mean(); }

// Runs `stage_modules.size()` rank threads, each stepping its stage `warmup +
// steps` times on (x, x) after a barrier; returns the stats of the timed steps.
std::vector<StepStats> run_steps(const std::vector<torch::nn::Sequential>& stage_modules,
                                 pp::PipelineOptions options, const torch::Tensor& x, int warmup, int steps,
                                 comm::Backend backend = comm::Backend::Threads) {
  const int stages = static_cast<int>(stage_modules.size());
  std::vector<StepStats> out(steps, StepStats(stages));  // rank r writes column r only
  testing::run_ranks(stages, [&](int rank, std::shared_ptr<comm::Communicator> comm) {
    pp::Pipeline pipe(stage_modules[rank], comm, square_loss, options);
    for (int s = 0; s < warmup + steps; ++s) {
      comm->barrier().wait();
      pipe.step(x, x);
      if (s >= warmup) out[s - warmup][rank] = pipe.last_step();
    }
  }, testing::test_options(backend));
  return out;
}

// `p` stages of one SleepLayer(forward_ms) each, stepped `warmup + steps`
// times with `schedule` and `m` micro-batches of one 4-float row.
std::vector<StepStats> run_sleeping_stages(int p, double forward_ms, pp::Schedule schedule, int m, int warmup,
                                           int steps, comm::Backend backend) {
  std::vector<torch::nn::Sequential> modules;
  for (int s = 0; s < p; ++s) modules.push_back(torch::nn::Sequential(SleepLayer(forward_ms)));
  pp::PipelineOptions options;
  options.micro_batches = m;
  options.schedule = schedule;
  return run_steps(modules, options, torch::ones({m, 4}), warmup, steps, backend);
}

std::vector<torch::nn::Sequential> stages_of(const torch::nn::Sequential& model, const pp::PartitionPlan& plan) {
  std::vector<torch::nn::Sequential> out;
  for (size_t s = 0; s < plan.stages.size(); ++s) out.push_back(pp::stage_module(model, plan, static_cast<int>(s)));
  return out;
}

double max_of(const std::vector<double>& v) { return v.empty() ? 0.0 : *std::max_element(v.begin(), v.end()); }

}  // namespace

std::vector<BubbleRow> run_bubble(const std::vector<int>& stages, const std::vector<int>& micro_batches,
                                  double forward_ms, int steps, comm::Backend backend) {
  std::vector<BubbleRow> rows;
  for (int p : stages) {
    for (pp::Schedule schedule : {pp::Schedule::GPipe, pp::Schedule::OneFOneB}) {
      for (int m : micro_batches) {
        const auto per_step = run_sleeping_stages(p, forward_ms, schedule, m, /*warmup=*/1, steps, backend);
        std::vector<double> bubbles, step_ms;
        for (const auto& step : per_step) {
          bubbles.push_back(measured_bubble(step));
          double slowest = 0;
          for (const auto& st : step) slowest = std::max(slowest, st.step_s);
          step_ms.push_back(slowest * 1e3);
        }
        BubbleRow row;
        row.stages = p;
        row.micro_batches = m;
        row.schedule = schedule;
        row.formula = bubble_formula(p, m);
        row.measured = median(bubbles);
        row.step_ms = median(step_ms);
        row.ideal_step_ms = 3 * forward_ms * (m + p - 1);
        rows.push_back(row);
      }
    }
  }
  return rows;
}

std::vector<OverheadRow> run_overhead(const std::vector<int>& stages, int micro_batches, int steps,
                                      comm::Backend backend) {
  std::vector<OverheadRow> rows;
  for (int p : stages) {
    for (pp::Schedule schedule : {pp::Schedule::GPipe, pp::Schedule::OneFOneB}) {
      const auto per_step = run_sleeping_stages(p, 0.0, schedule, micro_batches, /*warmup=*/2, steps, backend);
      std::vector<double> per_mb, outside;
      for (const auto& step : per_step) {
        const auto slowest = std::max_element(step.begin(), step.end(), [](const auto& a, const auto& b) {
          return a.step_s < b.step_s;
        });
        per_mb.push_back(slowest->step_s * 1e3 / micro_batches);
        outside.push_back((slowest->step_s - slowest->compute_s) * 1e3 / micro_batches);
      }
      rows.push_back({p, micro_batches, schedule, median(per_mb), median(outside)});
    }
  }
  return rows;
}

MemoryResult run_memory(int micro_batches, int64_t width, int64_t rows) {
  memory::install_cpu_tracking_allocator();
  MemoryResult r;
  r.micro_batches = micro_batches;
  r.width = width;
  r.rows = rows;
  torch::manual_seed(0);
  torch::nn::Sequential model;
  for (int i = 0; i < 4; ++i) {
    model->push_back(torch::nn::Linear(width, width));
    model->push_back(torch::nn::Tanh());
  }
  const pp::PartitionPlan plan = pp::even_partition(std::vector<pp::LayerCost>(model->size()), r.stages);
  const auto modules = stages_of(model, plan);
  const torch::Tensor x = torch::randn({micro_batches * rows, width});

  // One micro-batch's activations per stage, alone on this thread: what its
  // forward allocates and keeps (saved tensors and output), plus the received
  // input on the stages after the first.
  torch::Tensor in = x.slice(0, 0, rows);
  for (int s = 0; s < r.stages; ++s) {
    const torch::Tensor input = s == 0 ? in : in.detach().requires_grad_(true);
    const int64_t before = memory::cpu_allocator_counts().current_bytes;
    torch::nn::Sequential module = modules[s];  // forward is not const
    torch::Tensor out = module->forward(input);
    const int64_t kept = memory::cpu_allocator_counts().current_bytes - before;
    r.micro_batch_bytes.push_back(kept + (s > 0 ? static_cast<int64_t>(input.nbytes()) : 0));
    in = out.detach();
  }

  auto measure = [&](pp::Schedule schedule) {
    MemoryRow row;
    row.schedule = schedule;
    row.peak_in_flight.resize(r.stages);
    pp::PipelineOptions options;
    options.micro_batches = micro_batches;
    options.schedule = schedule;
    testing::run_ranks(r.stages, [&](int rank, std::shared_ptr<comm::Communicator> comm) {
      pp::Pipeline pipe(modules[rank], comm, square_loss, options);
      pipe.step(x, x);  // allocates the gradients, which then accumulate in place
      std::optional<memory::PeakMeter> meter;  // one meter for the process: rank 0's
      comm->barrier().wait();
      if (rank == 0) meter.emplace();
      comm->barrier().wait();
      pipe.step(x, x);
      comm->barrier().wait();
      if (rank == 0) row.process_peak_bytes = meter->peak_above_start();
      row.peak_in_flight[rank] = pipe.last_step().peak_in_flight;
    });
    for (int s = 0; s < r.stages; ++s) row.activation_bytes.push_back(row.peak_in_flight[s] * r.micro_batch_bytes[s]);
    return row;
  };
  r.gpipe = measure(pp::Schedule::GPipe);
  r.one_f_one_b = measure(pp::Schedule::OneFOneB);
  return r;
}

double PlanTiming::profiled_slowest_ms() const { return max_of(profiled_stage_ms); }
double PlanTiming::measured_slowest_ms() const { return max_of(measured_stage_ms); }

BalanceResult run_balance(int small_layers, int64_t width, int64_t wide, int64_t rows, int micro_batches,
                          int rounds, int steps_per_round) {
  BalanceResult r;
  r.small_layers = small_layers;
  r.width = width;
  r.wide = wide;
  r.rows = rows;
  r.micro_batches = micro_batches;
  torch::manual_seed(0);
  torch::nn::Sequential model;
  for (int i = 0; i < small_layers; ++i) model->push_back(torch::nn::Linear(width, width));
  model->push_back(torch::nn::Linear(width, wide));

  pp::ProfileOptions po;
  po.repeats = 5;
  const auto costs = pp::profile_layers(model, torch::randn({rows, width}), po);
  for (const auto& c : costs) r.layer_ms.push_back(c.time_s * 1e3);
  const pp::PartitionPlan plans[2] = {pp::partition_layers(costs, r.stages), pp::even_partition(costs, r.stages)};
  PlanTiming* timings[2] = {&r.automatic, &r.naive};
  std::vector<torch::nn::Sequential> modules[2];
  for (int k = 0; k < 2; ++k) {
    for (const auto& st : plans[k].stages) {
      timings[k]->bounds.push_back(st.begin);
      timings[k]->profiled_stage_ms.push_back(st.time_s * 1e3);
    }
    timings[k]->bounds.push_back(plans[k].stages.back().end);
    modules[k] = stages_of(model, plans[k]);
  }

  pp::PipelineOptions options;
  options.micro_batches = micro_batches;
  options.schedule = pp::Schedule::OneFOneB;
  const torch::Tensor x = torch::randn({rows * micro_batches, width});
  std::vector<std::vector<double>> stage_ms[2], step_ms(2);
  for (int k = 0; k < 2; ++k) stage_ms[k].resize(r.stages);
  for (int round = 0; round < rounds; ++round) {
    for (int i = 0; i < 2; ++i) {
      const int k = (round % 2 == 0) ? i : 1 - i;  // the plan going first alternates
      for (const auto& step : run_steps(modules[k], options, x, /*warmup=*/1, steps_per_round)) {
        double slowest = 0;
        for (int s = 0; s < r.stages; ++s) {
          stage_ms[k][s].push_back(step[s].compute_s * 1e3);
          slowest = std::max(slowest, step[s].step_s);
        }
        step_ms[k].push_back(slowest * 1e3);
      }
    }
  }
  for (int k = 0; k < 2; ++k) {
    for (int s = 0; s < r.stages; ++s) timings[k]->measured_stage_ms.push_back(median(stage_ms[k][s]));
    timings[k]->step_ms = median(step_ms[k]);
  }
  return r;
}

}  // namespace paisoar::bench
