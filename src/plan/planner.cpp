// plan_layouts: measure what the cost model needs (or take it from the
// cache), predict every candidate, keep those within the budget, rank them.
#include "paisoar/plan/planner.h"

#include <torch/torch.h>

#include <algorithm>
#include <exception>
#include <set>
#include <sstream>
#include <thread>

#include "paisoar/comm/communicator.h"
#include "paisoar/memory/device_memory.h"
#include "paisoar/memory/memory_report.h"
#include "paisoar/memory/tracking_allocator.h"
#include "paisoar/pipeline/layer_cost.h"
#include "paisoar/train/device_choice.h"
#include "paisoar/train/zoo.h"
#include "paisoar/version.h"
#include "src/config/optimizer_factory.h"
#include "src/config/precision_context.h"
#include "src/diagnosis/memory_prediction.h"
#include "src/util/cpu_count.h"
#include "src/plan/cost_cache.h"

namespace paisoar::plan {
namespace {

constexpr double kPlanMiB = 1024.0 * 1024.0;
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
        train::PrecisionContext context(precision);
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

std::string plan_mib(int64_t bytes) {
  std::ostringstream t;
  t.setf(std::ios::fixed);
  t.precision(1);
  t << static_cast<double>(bytes) / kPlanMiB;
  return t.str();
}

}  // namespace

Planning plan_layouts(const train::TrainConfig& config, const PlanOptions& options, std::ostream& log) {
  if (options.nproc < 1 || options.nodes < 1 || options.nproc % options.nodes != 0) {
    throw train::ConfigError("--nproc " + std::to_string(options.nproc) + " does not split over --nodes " +
                             std::to_string(options.nodes) + "; give a multiple of the node count");
  }
  Candidates candidates = enumerate_layouts(config, options.nproc);
  Planning out;
  out.dropped = candidates.dropped;
  if (candidates.layouts.empty()) {
    std::string why;  // each reason once, with the first layout it dropped
    std::set<std::string> said;
    for (const auto& d : out.dropped) {
      if (said.insert(d.why).second) why += "\n  " + d.layout.ranks.to_string() + ": " + d.why;
    }
    throw train::ConfigError("no layout of " + config.model.name + " fits " + std::to_string(options.nproc) +
                             " ranks:" + (why.empty() ? std::string(" none to try") : why));
  }

  const int per_node = options.nproc / options.nodes;
  const int cores = util::usable_cpus();
  const int threads = std::max(1, cores / per_node);
  const c10::Device device = train::resolve_device(config.device, 0);
  const bool across_hosts = options.nodes > 1 || config.distributed.backend == "gloo";
  const comm::Backend backend = across_hosts ? comm::Backend::Gloo : comm::Backend::Shm;
  CostCache cache(options.cache_path == "-" ? "" : options.cache_path.empty() ? default_cache_path()
                                                                              : options.cache_path,
                  log);
  const std::string where = std::string(PAISOAR_VERSION) + "/" + device.str() + "/threads" + std::to_string(threads);

  CostInputs in;
  in.global_batch = config.train.batch_size;
  in.schedule = config.parallel.schedule;
  in.contention = 1;
  in.pipeline_op_s = kPipelineOpSeconds;
  in.bucket_cap_bytes = config.distributed.bucket_cap_mb * kPlanMiB;
  in.state_per_parameter = train::state_per_parameter(config.optimizer.name, config.optimizer.momentum);

  // The whole model, one rank's view of no layout at all: the layers measured alone.
  train::TrainConfig whole = config;
  whole.parallel = train::ParallelConfig{};
  whole.zero.stage = 0;
  whole.activation_checkpointing.clear();
  train::TrainTask task = train::make_task(whole);
  task.model->to(device);
  const train::Precision precision = train::precision_for(config.amp, device.type());
  {
    std::vector<torch::Tensor> buffers = task.model->buffers();
    in.buffer_bytes = memory::storage_bytes(buffers);
    in.model_bytes = in.buffer_bytes + memory::storage_bytes(task.model->parameters());
  }
  if (device.is_cpu()) memory::install_cpu_tracking_allocator();  // what the profile's peak is counted by
  const std::string model = model_key(config) + "/" + precision.name + "/" + where;
  ThreadsFor scoped_threads(threads);
  std::set<int64_t> rows;
  for (const auto& l : candidates.layouts) rows.insert(l.rows(config.train.batch_size));
  for (int64_t r : rows) {
    const auto [data, labels] = train::first_samples(*task.train_data, r, device);
    const torch::Tensor x = as_input(data);
    in.input_bytes_per_row = data.nbytes() / std::max<int64_t>(1, data.size(0));
    std::ostringstream key;
    key << model << "/rows" << r << "/input" << x.sizes() << x.scalar_type();
    if (auto cached = cache.layers(key.str()); cached && cached->size() == task.layers.size()) {
      if (auto peak = cache.numbers(key.str() + "/profile_peak");
          peak && peak->size() == 1 && (per_node == 1 || cache.numbers(key.str() + "/load"))) {
        in.layers_at_rows[r] = *cached;
        in.profile_peak_at_rows[r] = static_cast<int64_t>(peak->front());
        continue;
      }
    }
    pipeline::ProfileOptions profile;
    profile.warmup = 2;
    profile.repeats = 5;
    std::vector<pipeline::LayerCost> costs;
    {
      train::PrecisionContext context(precision);
      const memory::PeakMeter meter(device);
      costs = pipeline::profile_layers(task.layers, x, profile);
      in.profile_peak_at_rows[r] = std::max<int64_t>(0, meter.peak_above_start());
    }
    // The times again with every rank of a node computing at once, as they
    // do in training: the bytes above are this process's alone.
    if (per_node * threads > 1 && per_node > 1) {
      const std::vector<pipeline::LayerCost> loaded = profile_under_load(whole, task, x, precision, per_node, profile);
      double alone = 0, together = 0;
      for (size_t i = 0; i < costs.size(); ++i) {
        alone += costs[i].time_s;
        together += loaded[i].time_s;
        costs[i].time_s = loaded[i].time_s;
        costs[i].forward_s = loaded[i].forward_s;
      }
      cache.set_numbers(key.str() + "/load", {alone > 0 ? together / alone : 1.0});
    }
    cache.set_layers(key.str(), costs);
    cache.set_numbers(key.str() + "/profile_peak", {static_cast<double>(in.profile_peak_at_rows[r])});
    in.layers_at_rows[r] = costs;
  }
  // The optimizer, measured alone, runs as much slower as the layers did under load.
  for (int64_t r : rows) {
    std::ostringstream key;
    const auto [data, labels] = train::first_samples(*task.train_data, r, device);
    key << model << "/rows" << r << "/input" << as_input(data).sizes() << as_input(data).scalar_type();
    if (auto load = cache.numbers(key.str() + "/load"); load && load->size() == 1) {
      in.contention = std::max(in.contention, load->front());
    }
  }
  const std::string opt_key = model + "/optimizer/" + config.optimizer.name;
  if (auto cached = cache.numbers(opt_key); cached && cached->size() == 2) {
    in.optimizer_s_per_byte = (*cached)[0];
    in.optimizer_step_bytes = static_cast<int64_t>((*cached)[1]);
  } else {
    in.optimizer_s_per_byte = optimizer_speed(*task.model, config.optimizer);
    in.optimizer_step_bytes = std::max<int64_t>(0, train::measure_optimizer_step_bytes(*task.model, config.optimizer, device));
    cache.set_numbers(opt_key, {in.optimizer_s_per_byte, static_cast<double>(in.optimizer_step_bytes)});
  }
  for (const auto& l : candidates.layouts) {
    if (l.ranks.tensor > 1 && !in.tensor_split.count(l.ranks.tensor)) {
      in.tensor_split[l.ranks.tensor] = tensor_split_of(whole, task, l.ranks.tensor);
    }
  }
  in.loader_batches = 1 + std::max<int64_t>(0, config.data.workers) * config.data.prefetch_factor;
  std::set<int> groups = {2};
  for (const auto& l : candidates.layouts) {
    groups.insert(l.ranks.data);
    groups.insert(l.ranks.tensor);
  }
  for (int g : groups) {
    if (g < 2) continue;
    const std::string key = std::string(PAISOAR_VERSION) + "/" + comm::to_string(backend) + "/ranks" +
                            std::to_string(g) + "/cores" + std::to_string(cores);
    if (auto cached = cache.comm(key); cached && cached->size() == 4) {
      for (const auto& [op, fit] : *cached) in.comm.set(op, g, fit);
      continue;
    }
    measure_comm_costs(in.comm, backend, g);
    std::vector<std::pair<Collective, LineFit>> fits;
    for (const auto& [k, fit] : in.comm.fits()) {
      if (k.second == g) fits.emplace_back(k.first, fit);
    }
    cache.set_comm(key, fits);
  }
  cache.save();

  out.budget_mib = options.memory_budget_mib > 0 ? options.memory_budget_mib : config.memory.budget_mb;
  const double budget = out.budget_mib * kPlanMiB;
  const RankedPlan* smallest = nullptr;
  std::vector<RankedPlan> over;
  for (const auto& l : candidates.layouts) {
    RankedPlan p{l, predict_step(l, in)};
    if (budget > 0 && static_cast<double>(p.predicted.peak_bytes()) > budget) {
      out.dropped.push_back({l, "predicted peak " + plan_mib(p.predicted.peak_bytes()) + " MiB per rank, over the " +
                                    plan_mib(static_cast<int64_t>(budget)) + " MiB budget"});
      over.push_back(p);
      continue;
    }
    out.feasible.push_back(p);
  }
  if (out.feasible.empty()) {
    for (const auto& p : over) {
      if (!smallest || p.predicted.peak_bytes() < smallest->predicted.peak_bytes()) smallest = &p;
    }
    throw train::ConfigError("no layout fits " + plan_mib(static_cast<int64_t>(budget)) + " MiB per rank; the smallest, " +
                             smallest->layout.to_string() + " on " + std::to_string(options.nproc) + " ranks, needs " +
                             plan_mib(smallest->predicted.peak_bytes()) +
                             " MiB: raise --memory-budget (memory.budget_mb) to that, or plan for more ranks");
  }
  std::stable_sort(out.feasible.begin(), out.feasible.end(), [](const RankedPlan& a, const RankedPlan& b) {
    return a.predicted.step_ms() < b.predicted.step_ms();
  });
  out.machine = std::to_string(cores) + " cores, " + std::to_string(per_node) + " ranks per node with " +
                std::to_string(threads) + (threads == 1 ? " thread" : " threads") + " each, " +
                (across_hosts ? "Gloo between ranks (measured over loopback here)" : "shared memory between ranks") +
                ", precision " + precision.name;
  return out;
}

}  // namespace paisoar::plan
