// `paisoar bench tta`: time to a target Fashion-MNIST test accuracy (91.6%,
// the "2 Conv+pooling" row of Zalando's benchmark table) with the reference
// CNN: `paisoar train` on N ranks next to the same model, recipe and data in
// PyTorch from Python, one process, fp32 (bench/tta_peer.py), in the same
// run. Both sides evaluate on the whole test set every --eval_every steps and
// stop at the first evaluation that reaches the target; both count training
// time only (evaluation passes excluded).
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <map>

#include <nlohmann/json.hpp>

#include "apps/paisoar-core/commands.h"
#include "bench/child_process.h"
#include "bench/python_peer.h"

namespace paisoar::app {
namespace {

using nlohmann::json;

struct TtaOptions {
  double target = 91.6;
  int64_t epochs = 10;       // the cosine schedule's length; the run stops at the target
  int64_t eval_every = 117;  // steps (a quarter epoch at batch 128)
  int64_t batch = 128;
  double lr = 0.05;          // per 64 samples, scaled linearly
  int nproc = 2;
  std::vector<std::string> dtypes = {"fp32"};
  std::string data = "/usr/share/datasets/fashion-mnist";
  std::string peer_script;
  std::string json = "tta_bench.json";
};

struct Outcome {
  double time_to_target_s = -1;  // -1: not reached
  int64_t steps_to_target = -1;
  double best_accuracy = 0;
  json evaluations = json::array();
};

void note_evaluation(Outcome& o, int64_t step, double seconds, double accuracy, double target) {
  o.evaluations.push_back({{"step", step}, {"seconds", seconds}, {"accuracy", accuracy}});
  o.best_accuracy = std::max(o.best_accuracy, accuracy);
  if (o.time_to_target_s < 0 && accuracy >= target) {
    o.time_to_target_s = seconds;
    o.steps_to_target = step;
  }
}

Outcome run_ours(const TtaOptions& o, const std::string& dtype) {
  const std::string run_dir = "/tmp/paisoar_tta_" + std::to_string(::getpid()) + "_" + dtype;
  const std::map<std::string, std::string> sets = {
      {"seed", "0"},
      {"run_dir", run_dir},
      {"model.name", "fashion_cnn"},
      {"data.format", "idx"},
      {"data.path", o.data},
      {"data.train_limit", "0"},
      {"data.eval_limit", "0"},
      {"data.augment", "false"},
      {"data.workers", "1"},
      {"train.epochs", std::to_string(o.epochs)},
      {"train.max_steps", "0"},
      {"train.batch_size", std::to_string(o.batch)},
      {"train.log_every", "100000"},
      {"optimizer.name", "sgd"},
      {"optimizer.lr", std::to_string(o.lr)},
      {"optimizer.lr_batch", "64"},
      {"optimizer.momentum", "0.9"},
      {"optimizer.clip_grad_norm", "5"},
      {"schedule.decay", "cosine"},
      {"schedule.warmup_steps", "20"},
      {"amp.dtype", dtype},
      {"distributed.overlap", "true"},
      {"distributed.compression", "none"},
      {"checkpoint.resume", "false"},
      {"profiler.enabled", "false"},
      {"eval.every_epochs", "1"},
      {"eval.every_steps", std::to_string(o.eval_every)},
      {"eval.target_accuracy", std::to_string(o.target)},
      {"eval.stop_at_target", "true"}};
  std::vector<std::string> cmd = {self_executable(), "train"};
  for (const auto& [key, value] : sets) {
    cmd.push_back("--set");
    cmd.push_back(key + "=" + value);
  }
  auto child = bench::run_child(launch_argv(o.nproc, cmd));
  if (!child.status.success()) {
    throw std::runtime_error("paisoar train " + child.status.describe() + ": " +
                             child.err.substr(child.err.size() > 2000 ? child.err.size() - 2000 : 0));
  }
  Outcome out;
  std::ifstream metrics(run_dir + "/metrics.jsonl");
  for (std::string line; std::getline(metrics, line);) {
    const auto record = json::parse(line);
    if (!record.contains("accuracy")) continue;
    note_evaluation(out, record.at("step"), record.at("seconds"), record.at("accuracy"), o.target);
  }
  std::system(("rm -rf '" + run_dir + "'").c_str());
  return out;
}

Outcome run_peer(const TtaOptions& o, const bench::PythonPeer& peer) {
  auto child = bench::run_child({peer.python, peer.script, "--data", o.data, "--epochs", std::to_string(o.epochs),
                                 "--batch", std::to_string(o.batch), "--lr", std::to_string(o.lr), "--target",
                                 std::to_string(o.target), "--eval_every", std::to_string(o.eval_every)});
  if (!child.status.success()) {
    throw std::runtime_error("tta_peer.py " + child.status.describe() + ": " +
                             child.err.substr(child.err.size() > 2000 ? child.err.size() - 2000 : 0));
  }
  const auto result = json::parse(bench::last_line(child.out));
  Outcome out;
  for (const auto& e : result.at("evaluations")) {
    note_evaluation(out, e.at("step"), e.at("seconds"), e.at("accuracy"), o.target);
  }
  return out;
}

void print_row(const std::string& name, const Outcome& r, int64_t batch) {
  if (r.time_to_target_s < 0) {
    std::printf("%-44s %14s %8s %12s %9.2f%%\n", name.c_str(), "not reached", "-", "-", r.best_accuracy);
  } else {
    std::printf("%-44s %12.1f s %8lld %12.0f %9.2f%%\n", name.c_str(), r.time_to_target_s,
                static_cast<long long>(r.steps_to_target), r.steps_to_target * batch / r.time_to_target_s,
                r.best_accuracy);
  }
  std::fflush(stdout);
}

int run_tta(const TtaOptions& o) {
  const auto peer = bench::find_python_peer("tta_peer.py", o.peer_script);
  std::printf("paisoar bench tta: FashionCnn to %.1f%% Fashion-MNIST test accuracy; batch %lld, SGD momentum "
              "0.9, lr %.3g per 64 (linear scaling), warmup 20 steps then cosine over %lld epochs, clip 5, "
              "evaluation every %lld steps; training time only\n",
              o.target, static_cast<long long>(o.batch), o.lr, static_cast<long long>(o.epochs),
              static_cast<long long>(o.eval_every));
  std::printf("%-44s %14s %8s %12s %10s\n", "run", "time to target", "steps", "samples/s", "best acc");
  json out = {{"target", o.target}, {"epochs", o.epochs}, {"eval_every", o.eval_every}, {"batch", o.batch},
              {"lr", o.lr}, {"rows", json::array()}};
  Outcome theirs;
  if (peer.ok()) {
    theirs = run_peer(o, peer);
    print_row("PyTorch " + peer.torch_version + " (Python), 1 process, fp32", theirs, o.batch);
    out["rows"].push_back({{"run", "pytorch"}, {"torch", peer.torch_version}, {"evaluations", theirs.evaluations},
                           {"time_to_target_s", theirs.time_to_target_s}});
  } else {
    std::fprintf(stderr, "paisoar bench tta: no PyTorch peer: %s\n", peer.missing.c_str());
  }
  for (const auto& dtype : o.dtypes) {
    const Outcome ours = run_ours(o, dtype);
    print_row("paisoar train, " + std::to_string(o.nproc) + " ranks, " + dtype, ours, o.batch);
    json row = {{"run", "paisoar"}, {"nproc", o.nproc}, {"dtype", dtype}, {"evaluations", ours.evaluations},
                {"time_to_target_s", ours.time_to_target_s}};
    if (ours.time_to_target_s > 0 && theirs.time_to_target_s > 0) {
      row["speedup"] = theirs.time_to_target_s / ours.time_to_target_s;
      std::printf("  %.2fx faster to %.1f%% than PyTorch fp32\n", theirs.time_to_target_s / ours.time_to_target_s,
                  o.target);
    }
    out["rows"].push_back(row);
  }
  std::ofstream(o.json) << out.dump(2) << "\n";
  std::printf("wrote %s\n", o.json.c_str());
  return 0;
}

}  // namespace

Command add_bench_tta_command(CLI::App& bench) {
  auto o = std::make_shared<TtaOptions>();
  auto* cmd = bench.add_subcommand("tta", "time to 91.6% Fashion-MNIST accuracy, against PyTorch fp32");
  cmd->add_option("--target", o->target, "test accuracy to reach, percent")->check(CLI::Range(1.0, 100.0));
  cmd->add_option("--epochs", o->epochs, "length of the cosine schedule")->check(CLI::Range(1, 1000));
  cmd->add_option("--eval_every", o->eval_every, "steps between evaluations")->check(CLI::Range(1, 100000));
  cmd->add_option("--nproc", o->nproc, "ranks for paisoar train")->check(CLI::Range(1, 64));
  cmd->add_option("--dtypes", o->dtypes, "autocast precisions to run ours in (fp32, bf16)")
      ->check(CLI::IsMember({"fp32", "bf16"}))
      ->delimiter(',');
  cmd->add_option("--data", o->data, "directory with the Fashion-MNIST .gz files");
  cmd->add_option("--peer-script", o->peer_script, "the PyTorch peer (default: bench/tta_peer.py)");
  cmd->add_option("--json", o->json, "where to write the results");
  return [o](int, char**) { return run_tta(*o); };
}

}  // namespace paisoar::app
