// `paisoar bench ddp-worker`: one rank of the DDP benchmark, run under the
// launcher by `paisoar bench ddp`. Trains the same model on the same batch
// with every variant (our DDP, no overlap, the naive per-gradient loop, each
// compression hook, or plain local training), the variants taking turns so
// machine drift hits all alike, and rank 0 writes each one's figures as JSON.
#include <torch/torch.h>

#include <nlohmann/json.hpp>

#include <chrono>
#include <fstream>
#include <memory>
#include <optional>

#include "apps/paisoar-core/commands.h"
#include "bench/measure_pair.h"
#include "paisoar/amp/autocast.h"
#include "paisoar/comm.h"
#include "paisoar/ddp.h"
#include "paisoar/models.h"

namespace paisoar::app {
namespace {

struct WorkerOptions {
  std::string model = "cnn";
  std::string precision = "bf16";
  int64_t batch = 64;  // per rank
  int steps = 10, warmup = 3, repeats = 3, threads = 1;
  std::vector<std::string> variants = {"ddp"};
  std::string out;
};

std::shared_ptr<torch::nn::Module> make_model(const std::string& name) {
  torch::manual_seed(0);
  if (name == "cnn") return models::FashionCnn().ptr();
  if (name == "resnet18") return models::resnet18(10).ptr();
  throw std::invalid_argument("--model must be cnn or resnet18, not '" + name + "'");
}

torch::Tensor forward(const std::shared_ptr<torch::nn::Module>& m, const torch::Tensor& x) {
  if (auto cnn = std::dynamic_pointer_cast<models::FashionCnnImpl>(m)) return cnn->forward(x);
  return std::dynamic_pointer_cast<models::ResNetImpl>(m)->forward(x);
}

// One variant's model, optimizer and (unless local or naive) reducer.
struct Trainer {
  std::string variant;
  std::shared_ptr<torch::nn::Module> model;
  std::unique_ptr<torch::optim::SGD> opt;
  std::unique_ptr<ddp::GradientReducer> reducer;
  std::shared_ptr<comm::Communicator> comm;
  bool bf16 = true;
  // Sums over the timed steps.
  double bytes = 0, backward_s = 0, exposed_s = 0;

  void step(const torch::Tensor& x, const torch::Tensor& y) {
    opt->zero_grad();
    if (reducer) reducer->pre_forward();
    torch::Tensor loss;
    {
      std::optional<amp::autocast> guard;
      if (bf16) guard.emplace();
      auto out = forward(model, x);
      if (reducer) reducer->post_forward({out});
      loss = torch::cross_entropy_loss(out, y);
    }
    loss.backward();
    if (variant == "naive") {
      // What C++ users write today: one blocking allreduce per gradient after backward.
      for (auto& p : model->parameters()) comm->allreduce(p.grad(), comm::ReduceOp::Avg).wait();
    }
    opt->step();
  }
  void record() {
    if (!reducer) return;
    const auto& s = reducer->last_stats();
    bytes += static_cast<double>(s.bytes);
    backward_s += s.backward_s;
    exposed_s += s.exposed_comm_s;
  }
};

Trainer make_trainer(const std::string& variant, const WorkerOptions& o,
                     const std::shared_ptr<comm::Communicator>& comm) {
  Trainer t;
  t.variant = variant;
  t.comm = comm;
  t.bf16 = o.precision == "bf16";
  t.model = make_model(o.model);
  t.opt = std::make_unique<torch::optim::SGD>(t.model->parameters(),
                                              torch::optim::SGDOptions(0.01).momentum(0.9));
  ddp::DdpOptions options;
  if (variant == "local" || variant == "naive") return t;
  if (variant == "no-overlap") options.overlap = false;
  else if (variant != "ddp") options.compression.type = ddp::parse_compression(variant);
  t.reducer = std::make_unique<ddp::GradientReducer>(t.model, comm, options);
  return t;
}

int run_worker(const WorkerOptions& o) {
  torch::set_num_threads(o.threads);
  auto comm = comm::Communicator::from_env();
  torch::manual_seed(1 + comm->rank());
  const bool cnn = o.model == "cnn";
  auto x = cnn ? torch::randn({o.batch, 1, 28, 28}) : torch::randn({o.batch, 3, 64, 64});
  auto y = torch::randint(10, {o.batch});
  std::vector<Trainer> trainers;
  for (const auto& v : o.variants) trainers.push_back(make_trainer(v, o, comm));
  for (auto& t : trainers) {
    for (int i = 0; i < o.warmup; ++i) t.step(x, y);
  }
  std::vector<std::vector<double>> samples(trainers.size());
  for (int r = 0; r < o.repeats; ++r) {
    for (size_t k = 0; k < trainers.size(); ++k) {
      auto& t = trainers[(k + r) % trainers.size()];  // rotate who goes first
      comm->barrier().wait();
      const auto start = std::chrono::steady_clock::now();
      for (int i = 0; i < o.steps; ++i) {
        t.step(x, y);
        t.record();
      }
      samples[(k + r) % trainers.size()].push_back(
          std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() / o.steps);
    }
  }
  if (comm->rank() != 0) return 0;
  nlohmann::json out = {{"world_size", comm->size()}, {"threads", torch::get_num_threads()}};
  const double timed = static_cast<double>(o.steps) * o.repeats;
  for (size_t k = 0; k < trainers.size(); ++k) {
    const auto& t = trainers[k];
    out["variants"][t.variant] = {{"step_ms", 1e3 * bench::median(samples[k])},
                                  {"bytes_per_step", t.bytes / timed},
                                  {"backward_ms", 1e3 * t.backward_s / timed},
                                  {"exposed_comm_ms", 1e3 * t.exposed_s / timed}};
  }
  std::ofstream(o.out) << out.dump() << "\n";
  return 0;
}

}  // namespace

Command add_bench_ddp_worker_command(CLI::App& bench) {
  auto o = std::make_shared<WorkerOptions>();
  auto* cmd = bench.add_subcommand("ddp-worker", "one rank of `paisoar bench ddp` (internal)");
  cmd->group("");  // hidden from --help
  cmd->add_option("--model", o->model);
  cmd->add_option("--precision", o->precision)->check(CLI::IsMember({"bf16", "fp32"}));
  cmd->add_option("--batch", o->batch);
  cmd->add_option("--steps", o->steps);
  cmd->add_option("--warmup", o->warmup);
  cmd->add_option("--repeats", o->repeats);
  cmd->add_option("--threads", o->threads);
  cmd->add_option("--variants", o->variants)->delimiter(',');
  cmd->add_option("--out", o->out)->required();
  return [o](int, char**) { return run_worker(*o); };
}

}  // namespace paisoar::app
