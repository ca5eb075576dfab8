// `paisoar bench recovery`: what a rank's death costs a `paisoar train` job
// under `paisoar launch --max_restarts 1`, for several checkpoint intervals.
// Each interval runs a 2-rank job (FashionCnn on Fashion-MNIST, fp32,
// checkpoint.every_steps = interval) in which rank 1 is SIGKILLed right after
// step K = m * interval + interval / 2 (the test-only fault point train.step,
// src/util/fault_point.h): half an interval of work is lost, the expected
// loss for a death at a random time. From the launcher's and rank 0's lines
// it measures the time from the death (rank 0's report of step K) to the
// launcher's notice, its teardown and restart, the restarted program's start
// and checkpoint load, and its first step; the work lost (K minus the step
// resumed from); and the per-step cost of checkpointing, against a run of the
// same job with checkpoints off in the same invocation. --section blocking
// measures how long the step waits for each save, synchronous against
// checkpoint.async, on the reference models.
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <numeric>

#include <nlohmann/json.hpp>

#include "apps/paisoar-core/commands.h"
#include "bench/child_process.h"
#include "bench/recovery_timeline.h"
#include "paisoar/checkpoint/checkpoint_manager.h"

namespace paisoar::app {
namespace {

using nlohmann::json;

struct RecoveryOptions {
  std::string section = "restart";  // or "blocking"
  std::vector<std::string> models = {"fashion_cnn", "mlp"};  // --section blocking, each at zero.stage 0 and 2
  int64_t rounds = 3;                                                // --section blocking
  std::vector<int64_t> intervals = {10, 50, 200};
  int64_t min_steps = 400;  // K is the first m * interval + interval / 2 with m * interval >= this (m >= 1)
  int64_t after = 20;       // steps the restarted job runs past K
  int64_t batch = 64;
  std::string model = "fashion_cnn";
  std::string data = "/usr/share/datasets/fashion-mnist";
  std::string json = "recovery_bench.json";
};

int64_t kill_step(const RecoveryOptions& o, int64_t interval) {
  const int64_t m = std::max<int64_t>(1, (o.min_steps + interval - 1) / interval);
  return m * interval + interval / 2;
}

double mean(const std::vector<double>& v) {
  return v.empty() ? 0 : std::accumulate(v.begin(), v.end(), 0.0) / static_cast<double>(v.size());
}

double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v.size() % 2 ? v[v.size() / 2] : (v[v.size() / 2 - 1] + v[v.size() / 2]) / 2;
}

std::vector<double> values(const std::map<int64_t, double>& m) {
  std::vector<double> out;
  for (const auto& [key, value] : m) out.push_back(value);
  return out;
}

// `paisoar launch --max_restarts 1 -- paisoar train --set ...` for `steps` steps.
std::vector<std::string> train_argv(const RecoveryOptions& o, const std::string& run_dir, int64_t steps,
                                    int64_t every_steps, int64_t samples,
                                    const std::map<std::string, std::string>& more = {}) {
  std::map<std::string, std::string> sets = {
      {"seed", "0"},
      {"run_dir", run_dir},
      {"model.name", o.model},
      {"data.format", "idx"},
      {"data.path", o.data},
      {"data.train_limit", std::to_string(samples)},
      {"data.eval_limit", "256"},
      {"data.augment", "false"},
      {"data.workers", "1"},
      {"train.epochs", "1000"},  // train.max_steps decides
      {"train.max_steps", std::to_string(steps)},
      {"train.batch_size", std::to_string(o.batch)},
      {"train.log_every", "1"},
      {"optimizer.name", "sgd"},
      {"amp.dtype", "fp32"},
      {"checkpoint.every_steps", std::to_string(every_steps)},
      {"checkpoint.keep_last", "3"},
      {"checkpoint.resume", "true"},
      {"profiler.enabled", "false"},
      {"eval.every_epochs", "0"},
      {"eval.every_steps", "0"}};
  for (const auto& [key, value] : more) sets[key] = value;
  std::vector<std::string> cmd = {self_executable(), "train"};
  for (const auto& [key, value] : sets) {
    cmd.push_back("--set");
    cmd.push_back(key + "=" + value);
  }
  auto argv = launch_argv(2, cmd);
  argv.insert(argv.begin() + 2, {"--max_restarts", "1", "--omp_num_threads", "1"});
  return argv;
}

// The job's output lines, timed; throws when it did not complete.
std::vector<bench::TimedLine> run_job(const std::vector<std::string>& argv, const std::string& what) {
  std::vector<bench::TimedLine> lines;
  const auto child = bench::run_child(argv, &lines);
  if (!child.status.success()) {
    throw std::runtime_error(what + ": paisoar launch " + child.status.describe() + ": " +
                             child.err.substr(child.err.size() > 3000 ? child.err.size() - 3000 : 0));
  }
  return lines;
}

// Seconds CheckpointManager::load_latest takes on `dir` (what each restarted
// rank runs to resume; the file is in the page cache, as it is then), median of 5.
double load_seconds(const std::string& dir, uintmax_t* bytes) {
  checkpoint::CheckpointOptions options;
  options.dir = dir;
  options.rank = 1;  // a reader: creates and prunes nothing
  checkpoint::CheckpointManager manager(options);
  const auto files = manager.list();
  if (files.empty()) throw std::runtime_error("no checkpoint in " + dir);
  *bytes = std::filesystem::file_size(files.back().path);
  std::vector<double> times;
  for (int i = 0; i < 5; ++i) {
    const auto start = std::chrono::steady_clock::now();
    if (!manager.load_latest()) throw std::runtime_error("no checkpoint loads from " + dir);
    times.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
  }
  return median(times);
}

// Sets PAISOAR_TEST_FAULT for as long as it lives (the launcher passes it to the ranks).
class FaultEnv {
 public:
  explicit FaultEnv(int64_t step) {
    ::setenv("PAISOAR_TEST_FAULT", ("train.step:" + std::to_string(step)).c_str(), 1);
    ::setenv("PAISOAR_TEST_FAULT_RANK", "1", 1);
  }
  ~FaultEnv() {
    ::unsetenv("PAISOAR_TEST_FAULT");
    ::unsetenv("PAISOAR_TEST_FAULT_RANK");
  }
};

json measure_interval(const RecoveryOptions& o, int64_t interval, const std::map<int64_t, double>& baseline,
                      int64_t samples, const std::string& run_dir) {
  const int64_t k = kill_step(o, interval);
  std::vector<bench::TimedLine> lines;
  {
    FaultEnv fault(k);
    lines = run_job(train_argv(o, run_dir, k + o.after, interval, samples),
                    "interval " + std::to_string(interval));
  }
  const auto t = bench::parse_recovery(lines);
  if (t.steps_before.rbegin()->first != k) {
    throw std::runtime_error("rank 0 reported step " + std::to_string(t.steps_before.rbegin()->first) +
                             " before the restart, not the kill step " + std::to_string(k));
  }
  const double death = t.steps_before.at(k);  // rank 1 dies at the fault point right after step K
  const auto first_after = *t.steps_after.begin();
  const auto redone = t.steps_after.find(k);
  uintmax_t bytes = 0;
  const double load_s = load_seconds(run_dir + "/checkpoints", &bytes);

  // Step times before the kill. A save shows as a longer step: its cost is
  // the mean excess of the save steps over the median plain step, spread
  // over the interval. The checkpoint-free run over the same steps is the
  // reference for the plain step; means include whatever else the machine ran.
  const auto gaps = bench::step_gaps(t.steps_before, 2, k);
  const auto base_gaps = bench::step_gaps(baseline, 2, k);
  std::vector<double> save_steps, plain_steps;
  for (const auto& [step, s] : gaps) (step % interval == 0 ? save_steps : plain_steps).push_back(s);
  const double plain_ms = 1e3 * median(plain_steps), base_ms = 1e3 * median(values(base_gaps));
  const double save_ms = 1e3 * mean(save_steps) - plain_ms;
  const double save_per_step_ms = save_ms / static_cast<double>(interval);

  json r = {{"interval", interval},
            {"kill_step", k},
            {"resumed_step", t.resumed_step},
            {"steps_lost", k - t.resumed_step},
            {"failure", t.failure},
            {"fresh_start_s", t.started_s},
            {"detect_s", t.noticed_s - death},
            {"teardown_restart_s", t.restart_s - t.noticed_s},
            {"start_and_load_s", t.resumed_s - t.restart_s},
            {"resumed_to_header_s", t.header_s - t.resumed_s},
            {"first_step", first_after.first},
            {"first_step_s", first_after.second - t.resumed_s},
            {"death_to_first_step_s", first_after.second - death},
            {"death_to_kill_step_again_s", redone == t.steps_after.end() ? -1.0 : redone->second - death},
            {"checkpoint_bytes", bytes},
            {"checkpoint_load_s", load_s},
            {"median_plain_step_ms", plain_ms},
            {"median_step_ms_checkpoints_off", base_ms},
            {"mean_step_ms", 1e3 * mean(values(gaps))},
            {"mean_step_ms_checkpoints_off", 1e3 * mean(values(base_gaps))},
            {"checkpoint_saves", save_steps.size()},
            {"save_ms", save_ms},
            {"save_ms_per_step", save_per_step_ms},
            {"save_overhead_percent", 100 * save_per_step_ms / base_ms}};
  std::system(("rm -rf '" + run_dir + "'").c_str());
  return r;
}

int run_recovery(const RecoveryOptions& o) {
  int64_t longest = 0;
  for (int64_t interval : o.intervals) longest = std::max(longest, kill_step(o, interval) + o.after);
  // One epoch covers every run when the data set allows: no epoch boundary inside.
  const int64_t samples = std::min<int64_t>(longest * o.batch, 60000);
  const std::string base_dir = "/tmp/paisoar_recovery_" + std::to_string(::getpid());
  std::printf("paisoar bench recovery: %s on Fashion-MNIST (%lld samples), 2 ranks, batch %lld, fp32; rank 1 "
              "SIGKILLed after step K = half an interval past a checkpoint; paisoar launch --max_restarts 1\n",
              o.model.c_str(), static_cast<long long>(samples), static_cast<long long>(o.batch));
  std::fflush(stdout);

  const auto baseline =
      bench::parse_steps(run_job(train_argv(o, base_dir + "_none", longest, 0, samples), "checkpoints off"));
  std::system(("rm -rf '" + base_dir + "_none'").c_str());

  json rows = json::array();
  for (int64_t interval : o.intervals) {
    rows.push_back(measure_interval(o, interval, baseline, samples, base_dir + "_" + std::to_string(interval)));
  }

  std::printf("\nrecovery (seconds; death = rank 0's report of step K, rank 1 dies right after it)\n");
  std::printf("%8s %6s %8s %6s %8s %10s %10s %8s %10s %10s %12s\n", "interval", "K", "resumed", "lost",
              "detect", "teardown+", "start+", "first", "death ->", "death ->", "fresh start");
  std::printf("%8s %6s %8s %6s %8s %10s %10s %8s %10s %10s %12s\n", "", "", "from", "steps", "", "restart",
              "load", "step", "1st step", "K again", "(attempt 0)");
  for (const auto& r : rows) {
    std::printf("%8lld %6lld %8lld %6lld %8.2f %10.2f %10.2f %8.2f %10.2f %10.2f %12.2f\n",
                r["interval"].get<long long>(), r["kill_step"].get<long long>(), r["resumed_step"].get<long long>(),
                r["steps_lost"].get<long long>(), r["detect_s"].get<double>(), r["teardown_restart_s"].get<double>(),
                r["start_and_load_s"].get<double>(), r["first_step_s"].get<double>(),
                r["death_to_first_step_s"].get<double>(), r["death_to_kill_step_again_s"].get<double>(),
                r["fresh_start_s"].get<double>());
  }
  std::printf("\ncheckpoint cost (steps 2..K; ms; save = mean excess of a save step over the median plain step)\n");
  std::printf("%8s %6s %12s %12s %12s %12s %10s %9s %9s %8s\n", "interval", "saves", "plain step", "step (off)",
              "save", "save/step", "overhead", "file MB", "load", "mean step");
  for (const auto& r : rows) {
    std::printf("%8lld %6lld %12.1f %12.1f %12.1f %12.2f %9.2f%% %9.2f %9.1f %8.1f\n", r["interval"].get<long long>(),
                r["checkpoint_saves"].get<long long>(), r["median_plain_step_ms"].get<double>(),
                r["median_step_ms_checkpoints_off"].get<double>(), r["save_ms"].get<double>(),
                r["save_ms_per_step"].get<double>(), r["save_overhead_percent"].get<double>(),
                r["checkpoint_bytes"].get<double>() / 1e6, 1e3 * r["checkpoint_load_s"].get<double>(),
                r["mean_step_ms"].get<double>());
  }
  const json out = {{"model", o.model}, {"nproc", 2}, {"batch", o.batch}, {"samples", samples},
                    {"baseline_steps", longest}, {"rows", rows}};
  std::ofstream(o.json) << out.dump(2) << "\n";
  std::printf("wrote %s\n", o.json.c_str());
  return 0;
}

// The median wait per save from the run's "checkpoints: ... the step waited
// X ms per save" line (rank 0's).
double save_wait_ms(const std::vector<bench::TimedLine>& lines) {
  const std::string key = "the step waited ";
  for (const auto& l : lines) {
    const size_t at = l.text.find(key);
    if (at != std::string::npos) return std::stod(l.text.substr(at + key.size()));
  }
  throw std::runtime_error("the run printed no 'the step waited' line");
}

// --section blocking: how long the step waits for a checkpoint save,
// checkpoint.async false against true, alternating in each round, per model
// (2 ranks, DDP, SGD with momentum, a save every 4 steps).
int run_blocking(const RecoveryOptions& o) {
  const std::string base_dir = "/tmp/paisoar_blocking_" + std::to_string(::getpid());
  std::printf("paisoar bench recovery --section blocking: 2 ranks, batch %lld, fp32, a save every 4 of 24 steps; "
              "the step's wait per save (median of the run's saves), synchronous and checkpoint.async, %lld "
              "alternating rounds\n",
              static_cast<long long>(o.batch), static_cast<long long>(o.rounds));
  std::fflush(stdout);
  json rows = json::array();
  std::printf("%-12s %5s %10s %12s %12s %8s\n", "model", "zero", "files MB", "sync ms", "async ms", "sync/async");
  for (const auto& model : o.models) {
   for (const char* zero : {"0", "2"}) {
    RecoveryOptions m = o;
    m.model = model;
    std::vector<double> sync_ms, async_ms;
    uintmax_t bytes = 0;
    for (int64_t round = 0; round < o.rounds; ++round) {
      for (const char* async : {"false", "true"}) {
        const std::string dir = base_dir + "_" + model + "_" + zero + "_" + async;
        const auto lines = run_job(train_argv(m, dir, 24, 4, 24 * o.batch,
                                              {{"checkpoint.async", async}, {"zero.stage", zero}}),
                                   model + " zero.stage " + zero + " checkpoint.async " + async);
        (std::string(async) == "true" ? async_ms : sync_ms).push_back(save_wait_ms(lines));
        checkpoint::CheckpointOptions options;
        options.dir = dir + "/checkpoints";
        options.rank = 1;
        const auto files = checkpoint::CheckpointManager(options).list();
        if (!files.empty()) {  // the newest checkpoint: its step file and its shard directory, if any
          bytes = std::filesystem::file_size(files.back().path);
          const auto shards = std::filesystem::path(options.dir) / ("zero-" + files.back().path.substr(
                                                                       files.back().path.size() - 24, 12));
          std::error_code ec;
          for (const auto& e : std::filesystem::directory_iterator(shards, ec)) bytes += e.file_size();
        }
        std::system(("rm -rf '" + dir + "'").c_str());
      }
    }
    const double s = median(sync_ms), a = median(async_ms);
    std::printf("%-12s %5s %10.1f %12.1f %12.1f %8.2fx\n", model.c_str(), zero, static_cast<double>(bytes) / 1e6,
                s, a, a > 0 ? s / a : 0.0);
    std::fflush(stdout);
    rows.push_back({{"model", model}, {"zero_stage", zero}, {"checkpoint_bytes", bytes}, {"sync_wait_ms", sync_ms},
                    {"async_wait_ms", async_ms}, {"sync_median_ms", s}, {"async_median_ms", a}});
   }
  }
  std::ofstream(o.json) << json({{"section", "blocking"}, {"nproc", 2}, {"batch", o.batch}, {"rows", rows}}).dump(2)
                        << "\n";
  std::printf("wrote %s\n", o.json.c_str());
  return 0;
}

}  // namespace

Command add_bench_recovery_command(CLI::App& bench) {
  auto o = std::make_shared<RecoveryOptions>();
  auto* cmd = bench.add_subcommand("recovery", "time from a rank's death to training resumed, work lost, "
                                               "checkpoint cost per step");
  cmd->add_option("--intervals", o->intervals, "checkpoint.every_steps values to measure")
      ->check(CLI::Range(int64_t{2}, int64_t{100000}))
      ->delimiter(',');
  cmd->add_option("--min_steps", o->min_steps, "steps before the last checkpoint ahead of the kill")
      ->check(CLI::Range(int64_t{1}, int64_t{100000}));
  cmd->add_option("--after", o->after, "steps the job runs past the kill step")->check(CLI::Range(1, 100000));
  cmd->add_option("--batch", o->batch, "global batch size (even)")->check(CLI::Range(2, 4096));
  cmd->add_option("--model", o->model, "model.name for paisoar train")->check(CLI::IsMember({"fashion_cnn", "mlp"}));
  cmd->add_option("--data", o->data, "directory with the Fashion-MNIST .gz files");
  cmd->add_option("--json", o->json, "where to write the results");
  cmd->add_option("--section", o->section, "restart: a rank's death and the restart; blocking: the step's wait "
                                           "per checkpoint save, synchronous against checkpoint.async")
      ->check(CLI::IsMember({"restart", "blocking"}));
  cmd->add_option("--models", o->models, "--section blocking: model.name values")->delimiter(',');
  cmd->add_option("--rounds", o->rounds, "--section blocking: alternating rounds")->check(CLI::Range(1, 100));
  return [o](int, char**) { return o->section == "blocking" ? run_blocking(*o) : run_recovery(*o); };
}

}  // namespace paisoar::app
