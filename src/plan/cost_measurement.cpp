// measure_costs: each input of the cost model measured once per key, in the
// order a plan needs them; every measurement runs with the threads a rank
// would have.
#include "src/plan/cost_measurement.h"

#include <torch/torch.h>

#include <algorithm>
#include <chrono>
#include <memory>
#include <exception>
#include <set>
#include <sstream>
#include <thread>

#include "paisoar/comm/communicator.h"
#include "paisoar/memory/device_memory.h"
#include "paisoar/memory/memory_report.h"
#include "paisoar/memory/tracking_allocator.h"
#include "paisoar/pipeline/layer_cost.h"
#include "paisoar/train/zoo.h"
#include "paisoar/version.h"
#include "src/config/optimizer_factory.h"
#include "src/config/precision_context.h"
#include "src/diagnosis/memory_prediction.h"
#include "src/diagnosis/probe_guard.h"
#include "src/train/micro_steps.h"

namespace paisoar::plan {
namespace {

constexpr double kBytesPerMiB = 1024.0 * 1024.0;
// The pipeline executor's fixed cost per micro-batch and stage, measured by
// `paisoar bench pipeline --section overhead` (docs/BENCHMARKS.md: 0.033-0.035 ms).
constexpr double kPipelineOpSeconds = 35e-6;

// Restores torch's thread count when the measurement ends.
class ThreadsFor {
 public:
  explicit ThreadsFor(int threads) : before_(torch::get_num_threads()) { torch::set_num_threads(threads); }
  ~ThreadsFor() { torch::set_num_threads(before_); }

 private:
  int before_;
};

std::string model_key(const train::TrainConfig& c) {
  std::ostringstream k;
  k << c.model.name << "/classes" << c.model.num_classes << "/hidden";
  for (auto h : c.model.hidden) k << h << ",";
  k << "/gpt" << c.model.n_layer << "x" << c.model.n_head << "x" << c.model.n_embd << "x" << c.model.block_size;
  k << "/data:" << c.data.format << ":" << c.data.image_size;
  return k.str();
}

torch::Tensor as_input(torch::Tensor x) {
  return x.scalar_type() == torch::kByte ? x.to(torch::kFloat) : x;  // images the device normalises
}

double median_seconds(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

// Seconds per trainable parameter byte of one optimizer step (the median of
// three after one that makes the state), on copies of the parameters.
double optimizer_speed(const torch::nn::Module& model, const train::OptimizerConfig& config) {
  std::vector<torch::Tensor> copies;
  int64_t bytes = 0;
  {
    torch::NoGradGuard no_grad;
    for (const auto& p : model.parameters()) {
      if (!p.requires_grad()) continue;
      torch::Tensor c = p.detach().clone().requires_grad_(true);
      c.mutable_grad() = torch::full_like(c, 1e-3);
      copies.push_back(c);
      bytes += c.nbytes();
    }
  }
  if (copies.empty() || bytes == 0) return 0;
  const auto optimizer = train::make_optimizer(config, copies, 1e-3);
  std::vector<double> times;
  for (int run = 0; run < 4; ++run) {
    const auto start = std::chrono::steady_clock::now();
    optimizer->step();
    if (run > 0) times.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
  }
  return median_seconds(times) / static_cast<double>(bytes);
}

// How many ways the tensor-parallel variant of width `t` splits each layer:
// the variant built on `t` thread ranks (as make_task builds it for a run),
// each layer's parameter bytes over its shard's on rank 0.
std::vector<double> tensor_split_of(const train::TrainConfig& whole, const train::TrainTask& task, int t) {
  train::TrainConfig config = whole;
  config.parallel.tensor = t;
  config.parallel.data = 1;
  std::vector<double> split(task.layers.size(), 1.0);
  comm::Store store = comm::Store::hash();
  comm::CommOptions options;
  options.backend = comm::Backend::Threads;
  std::vector<std::exception_ptr> errors(t);
  std::vector<std::thread> ranks;
  for (int rank = 0; rank < t; ++rank) {
    ranks.emplace_back([&, rank] {
      try {
        auto group = comm::Communicator::create(store, rank, t, options);
        const train::TrainTask shard = train::make_task(config, task.train_data, nullptr, group);
        if (rank != 0) return;
        for (size_t i = 0; i < split.size() && i < shard.layers.size(); ++i) {
          int64_t full = 0, mine = 0;
          for (const auto& p : task.layers.layer(i).parameters()) full += p.numel();
          for (const auto& p : shard.layers.layer(i).parameters()) mine += p.numel();
          if (mine > 0 && full > mine) split[i] = static_cast<double>(full) / static_cast<double>(mine);
        }
      } catch (...) {
        errors[rank] = std::current_exception();
      }
    });
  }
  for (auto& r : ranks) r.join();
  for (auto& e : errors) {
    if (e) std::rethrow_exception(e);
  }
  return split;
}

// Each layer's times with `ranks` copies of the model profiled at once on
// as many threads (each its own model and sample, as each rank has): the
// median over the copies of each layer's time.
std::vector<pipeline::LayerCost> profile_under_load(const train::TrainConfig& whole, const train::TrainTask& task,
                                                   const torch::Tensor& x, const train::Precision& precision,
                                                   int ranks, const pipeline::ProfileOptions& profile) {
  std::vector<std::vector<pipeline::LayerCost>> each(ranks);
  std::vector<std::exception_ptr> errors(ranks);
  std::vector<std::thread> threads;
  for (int rank = 0; rank < ranks; ++rank) {
    threads.emplace_back([&, rank] {
      try {
        const train::TrainTask copy = train::make_task(whole, task.train_data, nullptr);
        copy.model->to(x.device());
        each[rank] = pipeline::profile_layers(copy.layers, x.clone(), profile);
      } catch (...) {
        errors[rank] = std::current_exception();
      }
    });
  }
  for (auto& t : threads) t.join();
  for (auto& e : errors) {
    if (e) std::rethrow_exception(e);
  }
  std::vector<pipeline::LayerCost> out = each[0];
  for (size_t i = 0; i < out.size(); ++i) {
    std::vector<double> total, forward;
    for (const auto& costs : each) {
      total.push_back(costs[i].time_s);
      forward.push_back(costs[i].forward_s);
    }
    out[i].time_s = median_seconds(total);
    out[i].forward_s = median_seconds(forward);
  }
  return out;
}

// The tensor-parallel variant of width `t` at `x`'s rows, timed as a node
// runs it: `per_node` thread ranks in groups of `t` (each group over the
// run's transport, each rank its shard model), every rank profiling its
// layers at once, so that each layer's time holds its collectives and its
// share of the cores. Group 0's rank 0's times; the bytes are not kept (the
// ranks' allocations mix), the split gives them.
std::vector<pipeline::LayerCost> profile_tensor_parallel(const train::TrainConfig& whole, const train::TrainTask& task,
                                                        const torch::Tensor& x, int t, int per_node,
                                                        comm::Backend backend, const pipeline::ProfileOptions& profile) {
  train::TrainConfig config = whole;
  config.parallel.tensor = t;
  config.parallel.data = 1;
  const int ranks = std::max(t, per_node / t * t);
  std::vector<comm::Store> stores;
  for (int g = 0; g < ranks / t; ++g) stores.push_back(comm::Store::hash());
  comm::CommOptions options;
  options.backend = backend;  // the run's transport, with its per-call costs
  std::vector<pipeline::LayerCost> out;
  std::vector<std::exception_ptr> errors(ranks);
  std::vector<std::thread> threads;
  for (int i = 0; i < ranks; ++i) {
    threads.emplace_back([&, i] {
      try {
        auto group = comm::Communicator::create(stores[i / t], i % t, t, options);
        const train::TrainTask shard = train::make_task(config, task.train_data, nullptr, group);
        shard.model->to(x.device());
        auto costs = pipeline::profile_layers(shard.layers, x.clone(), profile);
        if (i == 0) out = std::move(costs);
      } catch (...) {
        errors[i] = std::current_exception();
      }
    });
  }
  for (auto& th : threads) th.join();
  for (auto& e : errors) {
    if (e) std::rethrow_exception(e);
  }
  return out;
}

// The tensor-parallel layers of every width and micro-batch size the layouts use.
void measure_tensor_parallel(const train::TrainConfig& whole, const train::TrainTask& task,
                             const std::vector<LayoutChoice>& layouts, const std::string& model,
                             const train::Precision& precision, const PlanMachine& machine, CostCache& cache,
                             CostInputs& in) {
  pipeline::ProfileOptions profile;
  profile.warmup = 2;
  profile.repeats = 5;
  profile.scope = [&precision] { return std::make_shared<train::PrecisionContext>(precision); };
  for (const auto& l : layouts) {
    const int t = l.ranks.tensor;
    const int64_t rows = l.rows(whole.train.batch_size);
    if (t == 1 || in.tensor_layers[t].count(rows)) continue;
    const std::string key = model + "/tensor" + std::to_string(t) + "/rows" + std::to_string(rows);
    if (auto cached = cache.layers(key); cached && cached->size() == task.layers.size()) {
      in.tensor_layers[t][rows] = *cached;
      continue;
    }
    const auto [data, labels] = train::first_samples(*task.train_data, rows, machine.device);
    auto costs = profile_tensor_parallel(whole, task, as_input(data), t, machine.per_node, machine.backend, profile);
    cache.set_layers(key, costs);
    in.tensor_layers[t][rows] = std::move(costs);
  }
}

// One micro-batch's forward, loss and backward through the whole model as
// the Trainer runs it (task.forward under a fresh precision scope, the
// task's loss), the median of 5 after 2; gradients and buffers put back.
double whole_step_seconds(const train::TrainTask& task, const torch::Tensor& data, const torch::Tensor& labels,
                          const train::Precision& precision) {
  const train::ProbeGuard untouched(*task.model);
  const train::LossFn loss_fn = train::loss_of(task);
  std::vector<torch::Tensor> params;
  for (const auto& p : task.model->parameters()) {
    if (p.requires_grad()) params.push_back(p);
  }
  std::vector<double> times;
  for (int run = 0; run < 7; ++run) {
    const auto start = std::chrono::steady_clock::now();
    torch::Tensor loss;
    {
      train::PrecisionContext context(precision);
      loss = loss_fn(task.forward(data), labels);
    }
    if (!params.empty() && loss.requires_grad()) {
      torch::autograd::grad({loss}, params, {}, /*retain_graph=*/false, /*create_graph=*/false, /*allow_unused=*/true);
    }
    if (run >= 2) times.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
  }
  return median_seconds(times);
}

// The layers at `rows` rows: from the cache, or profiled alone (bytes, the
// startup peak) and again under the node's load (times). Returns how much
// slower the load made them (1 when not measured under load).
double measure_layers(const train::TrainConfig& whole, const train::TrainTask& task, int64_t rows,
                      const std::string& model, const train::Precision& precision, const PlanMachine& machine,
                      CostCache& cache, CostInputs& in) {
  const auto [data, labels] = train::first_samples(*task.train_data, rows, machine.device);
  const torch::Tensor x = as_input(data);
  in.input_bytes_per_row = data.nbytes() / std::max<int64_t>(1, data.size(0));
  std::ostringstream key_text;
  key_text << model << "/rows" << rows << "/input" << x.sizes() << x.scalar_type();
  const std::string key = key_text.str();
  const bool loaded = machine.per_node > 1;
  const auto cached = cache.layers(key);
  const auto peak = cache.numbers(key + "/profile_peak");
  const auto load = cache.numbers(key + "/load");
  const auto overhead_cached = cache.numbers(key + "/overhead");
  if (cached && cached->size() == task.layers.size() && peak && peak->size() == 1 &&
      (!loaded || (load && load->size() == 1)) && overhead_cached && overhead_cached->size() == 1) {
    in.layers_at_rows[rows] = *cached;
    in.profile_peak_at_rows[rows] = static_cast<int64_t>(peak->front());
    in.step_overhead_at_rows[rows] = overhead_cached->front();
    return loaded ? load->front() : 1.0;
  }
  pipeline::ProfileOptions profile;
  profile.warmup = 2;
  profile.repeats = 5;
  // Each run in its own precision scope: autocast casts the weights again in
  // every training step, and caches them only within one.
  profile.scope = [&precision] { return std::make_shared<train::PrecisionContext>(precision); };
  std::vector<pipeline::LayerCost> costs;
  {
    const memory::PeakMeter meter(machine.device);
    costs = pipeline::profile_layers(task.layers, x, profile);
    in.profile_peak_at_rows[rows] = std::max<int64_t>(0, meter.peak_above_start());
  }
  // What a step costs beyond its layers (the loss, the regions' guards, the
  // batch's conversion), measured on the whole model alone, as the layers' first pass.
  double layers_alone = 0;
  for (const auto& c : costs) layers_alone += c.time_s;
  const double overhead = std::max(0.0, whole_step_seconds(task, x, labels, precision) - layers_alone);
  double slower = 1.0;
  if (loaded) {  // every rank of a node computes at once in training
    const auto under_load = profile_under_load(whole, task, x, precision, machine.per_node, profile);
    double alone = 0, together = 0;
    for (size_t i = 0; i < costs.size(); ++i) {
      alone += costs[i].time_s;
      together += under_load[i].time_s;
      costs[i].time_s = under_load[i].time_s;
      costs[i].forward_s = under_load[i].forward_s;
    }
    slower = alone > 0 ? together / alone : 1.0;
    cache.set_numbers(key + "/load", {slower});
  }
  in.step_overhead_at_rows[rows] = overhead * slower;
  cache.set_numbers(key + "/overhead", {in.step_overhead_at_rows[rows]});
  cache.set_layers(key, costs);
  cache.set_numbers(key + "/profile_peak", {static_cast<double>(in.profile_peak_at_rows[rows])});
  in.layers_at_rows[rows] = costs;
  return slower;
}

// Every collective over every group size the layouts use (and pairs, for sends).
void measure_collectives(const std::vector<LayoutChoice>& layouts, const PlanMachine& machine, CostCache& cache,
                         CommCosts& costs) {
  std::set<int> groups = {2};
  for (const auto& l : layouts) {
    groups.insert(l.ranks.data);
    groups.insert(l.ranks.tensor);
  }
  for (int g : groups) {
    if (g < 2) continue;
    const std::string key = std::string(PAISOAR_VERSION) + "/" + comm::to_string(machine.backend) + "/ranks" +
                            std::to_string(g) + "/cores" + std::to_string(machine.cores);
    if (auto cached = cache.comm(key); cached && cached->size() == 4) {
      for (const auto& [op, fit] : *cached) costs.set(op, g, fit);
      continue;
    }
    measure_comm_costs(costs, machine.backend, g);
    std::vector<std::pair<Collective, LineFit>> fits;
    for (const auto& [k, fit] : costs.fits()) {
      if (k.second == g) fits.emplace_back(k.first, fit);
    }
    cache.set_comm(key, fits);
  }
}

}  // namespace

CostInputs measure_costs(const train::TrainConfig& config, const std::vector<LayoutChoice>& layouts,
                         PlanMachine& machine, CostCache& cache) {
  const int threads = machine.threads;
  const c10::Device device = machine.device;
  CostInputs in;
  in.global_batch = config.train.batch_size;
  in.schedule = config.parallel.schedule;
  in.pipeline_op_s = kPipelineOpSeconds;
  in.bucket_cap_bytes = config.distributed.bucket_cap_mb * kBytesPerMiB;
  in.state_per_parameter = train::state_per_parameter(config.optimizer.name, config.optimizer.momentum);
  in.loader_batches = 1 + std::max<int64_t>(0, config.data.workers) * config.data.prefetch_factor;

  // The whole model, no layout at all: what each layout is cut from.
  train::TrainConfig whole = config;
  whole.parallel = train::ParallelConfig{};
  whole.zero.stage = 0;
  whole.activation_checkpointing.clear();
  train::TrainTask task = train::make_task(whole);
  task.model->to(device);
  const train::Precision precision = train::precision_for(config.amp, device.type());
  machine.precision = precision.name;
  in.buffer_bytes = memory::storage_bytes(task.model->buffers());
  in.model_bytes = in.buffer_bytes + memory::storage_bytes(task.model->parameters());
  if (device.is_cpu()) memory::install_cpu_tracking_allocator();  // what the profile's peak is counted by
  const std::string model = model_key(config) + "/" + precision.name + "/" + PAISOAR_VERSION + "/" + device.str() +
                            "/threads" + std::to_string(threads) + "/ranks" + std::to_string(machine.per_node);
  ThreadsFor scoped_threads(threads);
  std::set<int64_t> rows;
  for (const auto& l : layouts) rows.insert(l.rows(config.train.batch_size));
  // The optimizer, measured alone, runs as much slower as the layers did under load.
  in.contention = 1;
  for (int64_t r : rows) {
    in.contention = std::max(in.contention, measure_layers(whole, task, r, model, precision, machine, cache, in));
  }
  const std::string optimizer_key = model + "/optimizer/" + config.optimizer.name;
  if (auto cached = cache.numbers(optimizer_key); cached && cached->size() == 2) {
    in.optimizer_s_per_byte = (*cached)[0];
    in.optimizer_step_bytes = static_cast<int64_t>((*cached)[1]);
  } else {
    in.optimizer_s_per_byte = optimizer_speed(*task.model, config.optimizer);
    in.optimizer_step_bytes =
        std::max<int64_t>(0, train::measure_optimizer_step_bytes(*task.model, config.optimizer, device));
    cache.set_numbers(optimizer_key, {in.optimizer_s_per_byte, static_cast<double>(in.optimizer_step_bytes)});
  }
  for (const auto& l : layouts) {
    if (l.ranks.tensor > 1 && !in.tensor_split.count(l.ranks.tensor)) {
      in.tensor_split[l.ranks.tensor] = tensor_split_of(whole, task, l.ranks.tensor);
    }
  }
  measure_tensor_parallel(whole, task, layouts, model, precision, machine, cache, in);
  measure_collectives(layouts, machine, cache, in.comm);
  return in;
}

}  // namespace paisoar::plan
