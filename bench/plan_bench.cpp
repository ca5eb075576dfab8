// `paisoar bench plan`: the planner shown right (or wrong) by measurement.
// For each model (fashion_cnn, resnet18 on 32x32 crops of small JPEGs, a small gpt) and
// rank count it plans in this process, then trains every feasible layout
// through the launcher for --steps steps and reads the measured step time
// (the median over log windows after the first of the slowest rank's ms per
// step) and each rank's allocator peak from the run's metrics.jsonl. Prints
// predicted against measured per layout and, per model and rank count: the
// median and 90th percentile of |predicted - measured| / measured step time,
// the worst under-prediction of peak memory, and how far the layout the plan
// ranks first is from the fastest measured one (issue 47's targets: 5%, 10%,
// 5%, 5%). Writes everything to --json.
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>

#include "apps/paisoar-core/commands.h"
#include "bench/child_process.h"
#include "bench/photo_set.h"
#include "paisoar/comm/env.h"
#include "paisoar/error.h"
#include "paisoar/plan/planner.h"
#include "paisoar/train/train_config.h"

namespace paisoar::app {
namespace {

struct PlanBenchOptions {
  std::vector<std::string> models = {"fashion_cnn", "resnet18", "gpt"};
  std::vector<int> nprocs = {2, 4};
  int steps = 30;
  int repeats = 3;  // runs of each layout, in rotation: the median is kept, the spread shown
  std::string json = "plan_bench.json";
  std::string cache;  // the planner's cost cache ("": its default, "-": none)
  std::string work_dir = "/tmp/paisoar_bench_plan";
};

// A text for the byte-level gpt: words drawn from a small list.
std::string write_corpus(const std::string& dir) {
  const std::string path = dir + "/corpus.txt";
  std::ofstream out(path);
  const char* words[] = {"the ", "pipeline ", "tensor ", "shard ", "gather ", "rank ", "layer ", "step ", "plan "};
  uint64_t x = 12345;
  for (int i = 0; i < 60000; ++i) {
    x = x * 6364136223846793005ULL + 1442695040888963407ULL;
    out << words[(x >> 33) % 9];
  }
  return path;
}

// The settings every run shares, then the model's.
std::vector<std::string> model_sets(const std::string& model, const std::string& corpus, const std::string& photos,
                                    int steps) {
  std::vector<std::string> sets = {"model.name=" + model, "train.max_steps=" + std::to_string(steps),
                                   "train.log_every=5", "eval.every_epochs=0", "data.eval_limit=64",
                                   "checkpoint.resume=false", "profiler.memory=true", "profiler.enabled=true",
                                   "data.workers=1", "schedule.warmup_steps=0", "train.epochs=1000"};
  if (model == "resnet18") {  // small RGB images: 32x32 crops of about 50x37 JPEGs
    for (const char* s : {"data.format=folder", "data.image_size=32", "train.batch_size=32", "optimizer.lr=0.02"}) {
      sets.push_back(s);
    }
    sets.push_back("data.path=" + photos);
  }
  if (model == "gpt") {
    for (const char* s : {"data.format=text", "train.batch_size=32", "model.n_layer=4", "model.n_head=4",
                          "model.n_embd=64", "model.block_size=64"}) {
      sets.push_back(s);
    }
    sets.push_back("data.path=" + corpus);
  }
  return sets;
}

struct Measured {
  double step_ms = -1;
  int64_t peak_bytes = -1;  // the largest rank's allocator peak
  std::string error;
};

Measured read_metrics(const std::string& path) {
  Measured m;
  std::ifstream in(path);
  std::vector<double> windows;
  for (std::string line; std::getline(in, line);) {
    const auto j = nlohmann::json::parse(line, nullptr, false);
    if (j.is_discarded() || !j.is_object()) continue;
    if (j.value("event", "") == "memory") {
      for (const auto& r : j["ranks"]) m.peak_bytes = std::max<int64_t>(m.peak_bytes, r.value("peak_bytes", -1));
    } else if (j.contains("ranks") && j["ranks"].contains("step_ms")) {
      double slowest = 0;
      for (const auto& v : j["ranks"]["step_ms"]) slowest = std::max(slowest, v.get<double>());
      windows.push_back(slowest);
    }
  }
  if (windows.size() > 1) windows.erase(windows.begin());  // the first window holds the warm-up steps
  if (!windows.empty()) {
    std::sort(windows.begin(), windows.end());
    m.step_ms = windows[windows.size() / 2];
  }
  return m;
}

double percentile(std::vector<double> v, double q) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[std::min(v.size() - 1, static_cast<size_t>(q * static_cast<double>(v.size() - 1) + 0.5))];
}

int run_plan_bench(const PlanBenchOptions& o) {
  std::filesystem::create_directories(o.work_dir);
  const std::string corpus = write_corpus(o.work_dir);
  const std::string photos = o.work_dir + "/photos";
  bench::PhotoSetOptions photo_options;
  photo_options.images = 2000;
  photo_options.scale = 0.1;
  bench::make_photo_set(photos, photo_options);
  nlohmann::json all = nlohmann::json::array();
  bool complete = true;
  for (const auto& model : o.models) {
    for (int nproc : o.nprocs) {
      const std::vector<std::string> sets = model_sets(model, corpus, photos, o.steps);
      const train::TrainConfig config = train::load_config("", sets);
      plan::PlanOptions options;
      options.nproc = nproc;
      options.cache_path = plan::cache_path_from_flag(o.cache, comm::process_env());
      const plan::Planning planning = plan::plan_layouts(config, options, std::cerr);
      std::printf("\n== %s on %d ranks: %zu feasible layouts (%s)\n", model.c_str(), nproc, planning.feasible.size(),
                  planning.machine.c_str());
      std::printf("%-52s %9s %9s %7s %6s  %9s %9s %7s\n", "layout", "pred ms", "meas ms", "err", "spread",
                  "pred MiB", "meas MiB", "err");
      std::vector<double> time_errors, memory_errors;
      double fastest = 1e300, chosen = -1;
      // Every layout once, then again, --repeats times: a slow spell of
      // the machine falls on all layouts alike, not on one.
      const size_t n = planning.feasible.size();
      std::vector<std::vector<Measured>> runs(n);
      for (int r = 0; r < o.repeats; ++r) {
        for (size_t i = 0; i < n; ++i) {
          const auto& p = planning.feasible[i];
          const std::string run_dir = o.work_dir + "/" + model + "_n" + std::to_string(nproc) + "_" + std::to_string(i);
          std::filesystem::remove_all(run_dir);
          std::vector<std::string> command = {self_executable(), "train"};
          for (const auto& s : sets) command.insert(command.end(), {"--set", s});
          for (const auto& s : p.layout.overrides()) command.insert(command.end(), {"--set", s});
          command.insert(command.end(), {"--set", "run_dir=" + run_dir});
          const bench::ChildResult child = bench::run_child(launch_argv(nproc, command));
          Measured m = read_metrics(run_dir + "/metrics.jsonl");
          if (!child.status.success() || m.step_ms < 0) {
            m.error = bench::last_line(child.err.empty() ? child.out : child.err);
          }
          runs[i].push_back(m);
        }
      }
      for (size_t i = 0; i < n; ++i) {
        const auto& p = planning.feasible[i];
        Measured m;
        std::vector<double> times;
        for (const auto& run : runs[i]) {
          if (!run.error.empty()) m.error = run.error;
          if (run.step_ms > 0) times.push_back(run.step_ms);
          m.peak_bytes = std::max(m.peak_bytes, run.peak_bytes);
        }
        if (!m.error.empty()) complete = false;
        m.step_ms = times.empty() ? -1 : percentile(times, 0.5);
        const double spread = times.empty() ? 0 : (*std::max_element(times.begin(), times.end()) /
                                                   *std::min_element(times.begin(), times.end()) - 1);
        const double pred_ms = p.predicted.step_ms();
        const double pred_mib = static_cast<double>(p.predicted.peak_bytes()) / (1 << 20);
        const double meas_mib = static_cast<double>(m.peak_bytes) / (1 << 20);
        nlohmann::json row{{"model", model}, {"nproc", nproc}, {"layout", p.layout.to_string()},
                           {"overrides", p.layout.overrides()}, {"rank", i + 1},
                           {"predicted_step_ms", pred_ms}, {"measured_step_ms", m.step_ms},
                           {"measured_runs_ms", times},
                           {"predicted_compute_ms", p.predicted.compute_ms},
                           {"predicted_exposed_comm_ms", p.predicted.exposed_comm_ms},
                           {"predicted_bubble_ms", p.predicted.bubble_ms},
                           {"predicted_optimizer_ms", p.predicted.optimizer_ms},
                           {"predicted_peak_mib", pred_mib}, {"measured_peak_mib", meas_mib}, {"error", m.error}};
        all.push_back(row);
        if (!m.error.empty() || m.step_ms < 0) {
          std::printf("%-52s %9.2f   FAILED: %s\n", p.layout.to_string().c_str(), pred_ms, m.error.c_str());
          continue;
        }
        const double terr = (pred_ms - m.step_ms) / m.step_ms;
        time_errors.push_back(std::abs(terr));
        fastest = std::min(fastest, m.step_ms);
        if (chosen < 0) chosen = m.step_ms;
        double merr = 0;
        if (m.peak_bytes > 0) {
          merr = (pred_mib - meas_mib) / meas_mib;
          memory_errors.push_back(merr);
        }
        std::printf("%-52s %9.2f %9.2f %+6.1f%% %5.0f%%  %9.1f %9.1f %+6.1f%%\n", p.layout.to_string().c_str(),
                    pred_ms, m.step_ms, 100 * terr, 100 * spread, pred_mib, meas_mib, 100 * merr);
        std::fflush(stdout);
      }
      const double worst_under = memory_errors.empty() ? 0 : *std::min_element(memory_errors.begin(), memory_errors.end());
      std::printf("%s on %d ranks: step time |error| median %.1f%%, p90 %.1f%% (targets 5%%, 10%%); peak memory "
                  "worst under-prediction %.1f%% (target no more than 5%%); the plan's first choice measured "
                  "%.2f ms, the fastest %.2f ms: %+.1f%% (target within 5%%)\n",
                  model.c_str(), nproc, 100 * percentile(time_errors, 0.5), 100 * percentile(time_errors, 0.9),
                  100 * std::min(0.0, worst_under), chosen, fastest, 100 * (chosen / fastest - 1));
    }
  }
  std::ofstream(o.json) << all.dump(1) << "\n";
  std::printf("\nwrote %s\n", o.json.c_str());
  return complete ? 0 : 1;
}

}  // namespace

Command add_bench_plan_command(CLI::App& bench) {
  auto o = std::make_shared<PlanBenchOptions>();
  auto* cmd = bench.add_subcommand("plan", "the planner's predicted step time and memory against every feasible "
                                           "layout trained here");
  cmd->add_option("--models", o->models, "fashion_cnn, resnet18, gpt")->delimiter(',');
  cmd->add_option("--nproc", o->nprocs, "rank counts")->delimiter(',')->check(CLI::Range(1, 64));
  cmd->add_option("--steps", o->steps, "steps per layout")->check(CLI::Range(11, 100000));
  cmd->add_option("--repeats", o->repeats, "runs of each layout (rotating through them; the median is kept)")
      ->check(CLI::Range(1, 100));
  cmd->add_option("--json", o->json, "where the rows go");
  cmd->add_option("--cache", o->cache, "the planner's cost cache (-: none)");
  cmd->add_option("--work-dir", o->work_dir, "runs and the gpt corpus go here");
  return [o](int, char**) {
    try {
      return run_plan_bench(*o);
    } catch (const train::ConfigError& e) {
      std::cerr << "paisoar bench plan: " << error_text(e) << "\n";
      return 2;
    }
  };
}

}  // namespace paisoar::app
