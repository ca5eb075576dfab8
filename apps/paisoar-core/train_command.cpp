// `paisoar train`: the main job, a thin CLI over train::Trainer. The config
// (YAML, `--set key=value` overrides) chooses the reference model, the data,
// precision, DDP compression, accumulation, optimizer and schedule;
// `--print-config` shows the effective config. Run without a launcher, it
// starts its own ranks (--nproc, default 2).
#include <torch/torch.h>

#include <cstdlib>
#include <iostream>

#include "apps/paisoar-core/commands.h"
#include "paisoar/error.h"
#include "paisoar/comm.h"
#include "paisoar/train/trainer.h"
#include "paisoar/train/zoo.h"
#include "paisoar/train/device_choice.h"
#include "paisoar/train/run_environment.h"
#include "src/util/fault_point.h"

namespace paisoar::app {
namespace {

struct TrainArgs {
  int nproc = 2;  // ranks when started without a launcher
  std::string config;
  std::vector<std::string> sets;
  bool print_config = false;
};

int64_t launched_world_size(int nproc) {
  const char* world = std::getenv("WORLD_SIZE");
  return world ? std::atoll(world) : nproc;
}

int run_train(const TrainArgs& a, int argc, char** argv) {
  train::TrainConfig config;
  try {
    config = train::load_config(a.config, a.sets);
    if (a.print_config) {
      std::cout << train::dump_config(config);
      return 0;
    }
    train::validate(config, launched_world_size(a.nproc));
    train::check_reference_layout(config);
  } catch (const train::ConfigError& e) {
    std::cerr << "paisoar train: " << paisoar::error_text(e) << "\n";
    return 2;
  }
  relaunch_unless_launched(a.nproc, argc, argv);
  torch::Device device = torch::kCPU;
  try {
    device = train::resolve_device(config.device, comm::rank_info_from_env().local_rank);
  } catch (const train::ConfigError& e) {
    std::cerr << "paisoar train: " << paisoar::error_text(e) << "\n";
    return 2;
  }
  // The edge: the environment is read here, once, and passed down.
  const comm::EnvMap env = comm::process_env();
  comm::CommOptions comm_options;
  comm_options.backend = comm::backend_named(config.distributed.backend, "distributed.backend");
  auto comm = comm::Communicator::from_env(comm_options);
  // A config error found inside the ranks (a model the data does not fit, a
  // run over its memory budget, a checkpoint of another batch) exits with 2,
  // as one found before they started does.
  try {
    train::Trainer trainer(config, comm, train::RunEnvironment::from_env(env));  // parallel: auto plans here
    train::TrainTask task = train::make_task(trainer.config(), trainer.tensor_group());
    // Test-only: PAISOAR_TEST_FAULT=train.step:<k> kills the rank after step k
    // (src/util/fault_point.h; paisoar-core installed the injector at start).
    task.on_step = [](int64_t step) { util::fault_point("train.step", step); };
    task.model->to(device);  // the pipeline's layers are its modules, so they move too
    trainer.fit(task);
  } catch (const train::ConfigError& e) {
    std::cerr << "paisoar train: " << paisoar::error_text(e) << "\n";
    return 2;
  }
  return 0;
}

}  // namespace

Command add_train_command(CLI::App& app) {
  auto a = std::make_shared<TrainArgs>();
  auto* cmd = app.add_subcommand(
      "train", "train a reference model from a config file (starts --nproc ranks itself when run "
               "without `paisoar launch`)");
  cmd->add_option("--config", a->config, "YAML config (default: the built-in defaults)")
      ->check(CLI::ExistingFile);
  cmd->add_option("--set", a->sets, "override a key, e.g. --set optimizer.lr=0.1 (repeatable)");
  cmd->add_flag("--print-config", a->print_config, "print the effective config and exit");
  cmd->add_option("--nproc", a->nproc, "ranks to start when not launched")->check(CLI::Range(1, 64));
  return [a](int argc, char** argv) { return run_train(*a, argc, argv); };
}

}  // namespace paisoar::app
