// `paisoar bench zero-memory-worker`: one rank of the ZeRO section of
// `paisoar bench memory`, run under the launcher. Trains the GPT stack
// (bench/gpt_stack.h) with AdamW under plain DDP or ZeRO stage 1, 2 or 3, or
// cut into a 2-stage pipeline over world/2 data ranks with DDP or ZeRO-3
// inside each stage (ddp_pp2, zero3_pp2), for warmup + timed steps, then
// measures this rank: the bytes of parameters,
// gradients and optimizer state it holds after the last step, the tracking
// CPU allocator's peak over the steps, VmHWM, and the median step time. Rank 0
// gathers every rank's figures and writes them as JSON to --out.
#include <torch/torch.h>

#include <nlohmann/json.hpp>

#include <chrono>
#include <fstream>
#include <functional>
#include <memory>

#include "apps/paisoar-core/commands.h"
#include "bench/gpt_stack.h"
#include "bench/measure_pair.h"
#include "bench/proc_status.h"
#include "bench/zero_memory_run.h"
#include "paisoar/amp/precision_regions.h"
#include "paisoar/comm.h"
#include "paisoar/ddp.h"
#include "paisoar/hybrid.h"
#include "paisoar/memory.h"
#include "paisoar/models/layer_sequence.h"
#include "paisoar/pipeline.h"
#include "paisoar/zero.h"

namespace paisoar::app {
namespace {

struct WorkerOptions {
  bench::ZeroMemoryRun run;
  std::string out;
};

// One way of training: a step (zero_grad, forward, loss, backward, optimizer
// step; returns the loss) and what the rank holds at rest.
struct Trainer {
  std::function<torch::Tensor(const torch::Tensor& idx, const torch::Tensor& targets)> step;
  std::function<zero::MemoryBytes()> memory;
  std::shared_ptr<void> keep;  // owns the model, wrapper and optimizer
  int64_t held_params = 0;     // the parameters this rank's part holds (all, without a pipeline)
};

std::unique_ptr<torch::optim::AdamW> adamw(const std::vector<torch::Tensor>& params) {
  return std::make_unique<torch::optim::AdamW>(params, torch::optim::AdamWOptions(1e-4).weight_decay(0.1));
}

Trainer ddp_trainer(torch::nn::Sequential net, const std::shared_ptr<comm::Communicator>& comm) {
  struct State {
    torch::nn::Sequential net;
    DistributedDataParallel<torch::nn::Sequential> ddp;
    std::unique_ptr<torch::optim::AdamW> opt;
  };
  auto s = std::make_shared<State>(State{net, DistributedDataParallel<torch::nn::Sequential>(net, comm),
                                         adamw(net->parameters())});
  Trainer t;
  t.step = [s](const torch::Tensor& idx, const torch::Tensor& targets) {
    s->opt->zero_grad();
    auto loss = models::GptImpl::loss(s->ddp(idx), targets);
    loss.backward();
    s->opt->step();
    return loss.detach();
  };
  t.memory = [s] { return zero::replicated_memory(s->net->parameters(), *s->opt); };
  t.keep = s;
  return t;
}

Trainer zero_trainer(torch::nn::Sequential net, int stage, const std::shared_ptr<comm::Communicator>& comm) {
  struct State {
    std::shared_ptr<torch::nn::Module> model;
    std::function<torch::Tensor(const torch::Tensor&)> forward;
    std::unique_ptr<zero::ZeroOptimizer> opt;
  };
  auto s = std::make_shared<State>();
  if (stage == 3) {
    zero::LayerList layers(net);
    s->model = layers.ptr();
    s->forward = [layers](const torch::Tensor& x) mutable { return layers->forward(x); };
  } else {
    s->model = net.ptr();
    s->forward = [net](const torch::Tensor& x) mutable { return net->forward(x); };
  }
  zero::ZeroOptions o;
  o.stage = stage;
  s->opt = std::make_unique<zero::ZeroOptimizer>(
      s->model, comm, [](const std::vector<zero::ShardParam>& shard) { return adamw(zero::tensors_of(shard)); },
      o);
  Trainer t;
  t.step = [s](const torch::Tensor& idx, const torch::Tensor& targets) {
    s->opt->zero_grad();
    auto loss = models::GptImpl::loss(s->forward(idx), targets);
    loss.backward();
    s->opt->step();
    return loss.detach();
  };
  t.memory = [s] { return s->opt->memory(); };
  t.keep = s;
  return t;
}

// The stack cut into 2 stages of about equal parameter counts over world/2
// data ranks, each stage trained by DDP or ZeRO-3 (one unit per layer,
// gathered by its region) across the data ranks, 2 micro-batches (1F1B).
Trainer pipeline_trainer(torch::nn::Sequential net, bool zero3, const std::shared_ptr<comm::Communicator>& comm) {
  TORCH_CHECK(comm->size() % 2 == 0, "the pipeline modes need an even number of ranks, got ", comm->size());
  struct State {
    std::shared_ptr<hybrid::HybridMesh> mesh;
    models::LayerSequence layers, stage_layers;
    std::unique_ptr<pipeline::Pipeline> pipe;
    std::unique_ptr<ddp::GradientReducer> reducer;
    std::unique_ptr<torch::optim::Optimizer> opt;
    zero::ZeroOptimizer* zero = nullptr;
    std::unique_ptr<zero::GatherRegions> gather;
  };
  auto s = std::make_shared<State>();
  s->mesh = std::make_shared<hybrid::HybridMesh>(comm, hybrid::ParallelLayout{comm->size() / 2, 2, 1});
  s->layers = models::LayerSequence::of_sequential(net);
  std::vector<pipeline::LayerCost> costs;
  for (const auto& layer : s->layers.layers()) {
    pipeline::LayerCost c;
    c.name = layer.name;
    for (const auto& p : layer.parameters()) c.time_s += static_cast<double>(p.numel());
    costs.push_back(c);
  }
  pipeline::PipelineOptions po;
  po.micro_batches = 2;
  s->pipe = std::make_unique<pipeline::Pipeline>(
      s->layers, pipeline::partition_layers(costs, 2), s->mesh->pipeline_group(),
      [](const torch::Tensor& out, const torch::Tensor& y) { return models::GptImpl::loss(out, y); }, po);
  const auto stage = s->pipe->module();
  s->stage_layers = models::LayerSequence(stage.ptr(), stage->layers());
  if (zero3) {
    zero::ZeroOptions o;
    o.stage = 3;
    o.units = zero::GatherRegions::units_of(s->stage_layers, *stage);
    auto opt = std::make_unique<zero::ZeroOptimizer>(
        stage.ptr(), s->mesh->data_group(),
        [](const std::vector<zero::ShardParam>& shard) { return adamw(zero::tensors_of(shard)); }, o);
    s->zero = opt.get();
    s->gather = std::make_unique<zero::GatherRegions>(*opt, s->stage_layers, *stage);
    s->opt = std::move(opt);
    hybrid::sync_in_last_backward(*s->pipe, [z = s->zero](bool on) { z->set_sync(on); });
  } else {
    s->reducer = std::make_unique<ddp::GradientReducer>(stage.ptr(), s->mesh->data_group());
    hybrid::sync_in_last_backward(*s->pipe, *s->reducer);
    s->opt = adamw(stage->parameters());
  }
  Trainer t;
  t.step = [s](const torch::Tensor& idx, const torch::Tensor& targets) {
    if (s->zero) {
      s->zero->zero_grad();  // ZeroOptimizer's own (Optimizer::zero_grad is not virtual)
    } else {
      s->opt->zero_grad();
    }
    torch::Tensor loss;
    if (s->gather) {
      amp::ActiveRegionRunner gathering(*s->gather);
      loss = s->pipe->step(idx, targets);
    } else {
      loss = s->pipe->step(idx, targets);
    }
    s->opt->step();
    return loss;
  };
  t.memory = [s] {
    if (s->zero) return s->zero->memory();
    return zero::replicated_memory(s->pipe->parameters(), *s->opt);
  };
  for (const auto& p : stage->parameters()) t.held_params += p.numel();
  t.keep = s;
  return t;
}

Trainer make_trainer(const std::string& mode, torch::nn::Sequential net,
                     const std::shared_ptr<comm::Communicator>& comm) {
  if (mode == "ddp_pp2") return pipeline_trainer(std::move(net), false, comm);
  if (mode == "zero3_pp2") return pipeline_trainer(std::move(net), true, comm);
  if (mode == "ddp") return ddp_trainer(std::move(net), comm);
  if (mode == "zero1") return zero_trainer(std::move(net), 1, comm);
  if (mode == "zero2") return zero_trainer(std::move(net), 2, comm);
  if (mode == "zero3") return zero_trainer(std::move(net), 3, comm);
  throw std::invalid_argument("--mode must be ddp, zero1, zero2, zero3, ddp_pp2 or zero3_pp2, not '" + mode + "'");
}

// This rank's figures, in the order of kFields.
const std::vector<std::string> kFields = {"param_bytes",      "grad_bytes",  "optimizer_state_bytes",
                                          "step_peak_bytes",  "rest_bytes",  "peak_rss_bytes",
                                          "step_ms",          "held_params"};

int run_worker(const WorkerOptions& o) {
  const auto& r = o.run;
  memory::install_cpu_tracking_allocator();  // before the model: every tensor is counted
  torch::set_num_threads(r.threads);
  auto comm = comm::Communicator::from_env();
  models::GptOptions g;
  g.vocab_size = r.vocab;
  g.block_size = r.seq;
  g.n_layer = r.layers;
  g.n_embd = r.embd;
  g.n_head = r.heads;
  torch::manual_seed(0);
  auto net = bench::gpt_stack(g);
  int64_t n_params = 0;
  for (const auto& p : net->parameters()) n_params += p.numel();
  // Each data rank its own batch (a pipeline's stages read the same one).
  const bool pipelined = r.mode.size() > 4 && r.mode.compare(r.mode.size() - 4, 4, "_pp2") == 0;
  torch::manual_seed(1 + (pipelined ? comm->rank() / 2 : comm->rank()));
  const auto idx = torch::randint(r.vocab, {r.batch, r.seq});
  const auto targets = torch::randint(r.vocab, {r.batch, r.seq});
  auto trainer = make_trainer(r.mode, net, comm);
  if (trainer.held_params == 0) trainer.held_params = n_params;

  memory::reset_cpu_peak();  // the peak of the steps, not of building the model
  std::vector<double> losses, step_s;
  for (int i = 0; i < r.warmup + r.steps; ++i) {
    comm->barrier().wait();
    const auto start = std::chrono::steady_clock::now();
    losses.push_back(trainer.step(idx, targets).item<double>());
    if (i >= r.warmup) {
      step_s.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
    }
  }
  const auto held = trainer.memory();
  const auto counts = memory::cpu_allocator_counts();
  const std::vector<double> mine = {static_cast<double>(held.params),
                                    static_cast<double>(held.grads),
                                    static_cast<double>(held.optimizer_state),
                                    static_cast<double>(counts.peak_bytes),
                                    static_cast<double>(counts.current_bytes),
                                    1024.0 * static_cast<double>(bench::proc_status_kib("VmHWM")),
                                    1e3 * bench::median(step_s),
                                    static_cast<double>(trainer.held_params)};
  auto local = torch::tensor(mine, torch::kDouble);
  std::vector<torch::Tensor> all;
  for (int k = 0; k < comm->size(); ++k) all.push_back(torch::empty_like(local));
  comm->allgather(all, local).wait();
  if (comm->rank() != 0) return 0;
  nlohmann::json ranks = nlohmann::json::array();
  for (const auto& t : all) {
    nlohmann::json row;
    for (size_t f = 0; f < kFields.size(); ++f) row[kFields[f]] = t[static_cast<int64_t>(f)].item<double>();
    ranks.push_back(row);
  }
  nlohmann::json out = {{"mode", r.mode}, {"world_size", comm->size()}, {"params", n_params},
                        {"threads", torch::get_num_threads()}, {"losses", losses}, {"ranks", ranks}};
  std::ofstream(o.out) << out.dump() << "\n";
  return 0;
}

}  // namespace

Command add_bench_zero_memory_worker_command(CLI::App& bench) {
  auto o = std::make_shared<WorkerOptions>();
  auto* cmd = bench.add_subcommand("zero-memory-worker",
                                   "one rank of `paisoar bench memory`'s ZeRO section (internal)");
  cmd->group("");  // hidden from --help
  cmd->add_option("--mode", o->run.mode)
      ->check(CLI::IsMember({"ddp", "zero1", "zero2", "zero3", "ddp_pp2", "zero3_pp2"}));
  cmd->add_option("--vocab", o->run.vocab);
  cmd->add_option("--layers", o->run.layers);
  cmd->add_option("--embd", o->run.embd);
  cmd->add_option("--heads", o->run.heads);
  cmd->add_option("--batch", o->run.batch);
  cmd->add_option("--seq", o->run.seq);
  cmd->add_option("--warmup", o->run.warmup);
  cmd->add_option("--steps", o->run.steps);
  cmd->add_option("--threads", o->run.threads);
  cmd->add_option("--out", o->out)->required();
  return [o](int, char**) { return run_worker(*o); };
}

}  // namespace paisoar::app
