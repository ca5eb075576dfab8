// RunReport: the bar and the plain lines carry the same figures; the metrics
// file gets every logged step and evaluation either way.
#include "src/run_summary/run_report.h"

#include <c10/util/Exception.h>

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <iostream>

#include <nlohmann/json.hpp>

namespace paisoar::train {
namespace {

std::string format(const char* pattern, double a, double b) {
  char text[96];
  std::snprintf(text, sizeof(text), pattern, a, b);
  return text;
}

// Seconds since the Unix epoch: when a record was written, so the runs a
// resumed run_dir collects can be told apart and lined up with other logs.
double wall_clock_s() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

// True when `path` exists, is not empty and does not end with a newline (the
// last record of a killed run).
bool ends_mid_line(const std::string& path) {
  std::ifstream in(path, std::ios::binary | std::ios::ate);
  if (!in || in.tellg() <= 0) return false;
  in.seekg(-1, std::ios::end);
  return in.get() != '\n';
}

void write_record(std::ofstream& out, const nlohmann::json& record) { out << record.dump() << "\n" << std::flush; }

// Per rank: rank/step_ms/<r>, rank/busy_ms/<r>, memory/*_mb/<r> (when
// measured), and rank/busy_spread: (slowest - fastest) / median busy time.
void add_rank_scalars(format::EventWriter& events, const std::vector<RankLog>& ranks, int64_t step, double now) {
  if (ranks.empty()) return;
  std::vector<double> busy;
  for (size_t r = 0; r < ranks.size(); ++r) {
    std::string suffix = "/";
    suffix += std::to_string(r);
    events.add_scalar("rank/step_ms" + suffix, ranks[r].step_ms, step, now);
    events.add_scalar("rank/busy_ms" + suffix, ranks[r].busy_ms, step, now);
    if (ranks[r].resident_mb >= 0) events.add_scalar("memory/resident_mb" + suffix, ranks[r].resident_mb, step, now);
    if (ranks[r].allocated_mb >= 0) events.add_scalar("memory/allocated_mb" + suffix, ranks[r].allocated_mb, step, now);
    busy.push_back(ranks[r].busy_ms);
  }
  std::sort(busy.begin(), busy.end());
  const double median = busy[busy.size() / 2];
  if (median > 0) events.add_scalar("rank/busy_spread", (busy.back() - busy.front()) / median, step, now);
}

}  // namespace

RunReport::RunReport(const TrainConfig& config, bool lead, int64_t total_steps)
    : lead_(lead), log_every_(config.train.log_every), total_steps_(total_steps) {
  if (!lead_) return;
  std::error_code ec;
  std::filesystem::create_directories(config.run_dir, ec);
  const std::string path = config.run_dir + "/metrics.jsonl";
  const bool torn = ends_mid_line(path);
  metrics_.open(path, std::ios::app);
  if (!metrics_) {
    C10_THROW_ERROR(Error, "cannot write " + config.run_dir +
                             "/metrics.jsonl; set run_dir to a writable directory");
  }
  if (torn) metrics_ << "\n";  // a killed run's last line stays torn, and ours starts whole
  const std::string tensorboard = config.logging.tensorboard_dir(config.run_dir);
  if (!tensorboard.empty()) events_.emplace(tensorboard);
}

void RunReport::begin_epoch(int64_t epoch, int64_t steps) {
  if (lead_ && ::isatty(STDOUT_FILENO)) {
    bar_.emplace("epoch " + std::to_string(epoch), steps, std::cout, util::ProgressBar::Style::Line);
  }
}

void RunReport::run_start(int64_t step, int world_size, const std::string& config_text) {
  if (!lead_) return;
  write_record(metrics_, {{"time", wall_clock_s()},
                          {"event", "run_start"},
                          {"step", step},
                          {"world_size", world_size},
                          {"config", config_text}});
}

bool RunReport::log_due(int64_t step, bool epoch_end) const {
  return step % log_every_ == 0 || step == total_steps_ || epoch_end;
}

void RunReport::step_done() {
  if (bar_) bar_->advance();
}

void RunReport::log_step(const StepLog& s) {
  if (!lead_) return;
  if (bar_) {
    bar_->set_status(format("loss %.4f  lr %.4g", s.loss, s.lr));
  } else {
    std::printf("epoch %lld step %lld/%lld  loss %.4f  lr %.4g  %.0f ms/step  %.0f samples/s  "
                "(data wait %.1f ms/step; last step: backward %.0f ms, exposed comm %.1f ms)\n",
                static_cast<long long>(s.epoch), static_cast<long long>(s.step),
                static_cast<long long>(total_steps_), s.loss, s.lr, s.ms_per_step, s.samples_per_s,
                s.data_wait_ms, s.backward_ms, s.exposed_comm_ms);
    std::fflush(stdout);
  }
  nlohmann::json record{{"time", wall_clock_s()},
                        {"step", s.step},
                        {"epoch", s.epoch},
                        {"loss", s.loss},
                        {"lr", s.lr},
                        {"ms_per_step", s.ms_per_step},
                        {"samples_per_s", s.samples_per_s},
                        {"data_wait_ms", s.data_wait_ms},
                        {"loss_scale", s.loss_scale},
                        {"exposed_comm_ms", s.exposed_comm_ms}};
  if (s.grad_norm >= 0) record["grad_norm"] = s.grad_norm;
  if (!s.phases_ms.empty()) {
    nlohmann::json phases = nlohmann::json::object();
    for (const auto& [name, ms] : s.phases_ms) phases[name] = ms;
    record["phases_ms"] = phases;
  }
  if (!s.ranks.empty()) {
    nlohmann::json ranks = nlohmann::json::object();
    for (const auto& r : s.ranks) {
      ranks["step_ms"].push_back(r.step_ms);
      ranks["busy_ms"].push_back(r.busy_ms);
      ranks["resident_mb"].push_back(r.resident_mb);
      ranks["allocated_mb"].push_back(r.allocated_mb);
    }
    record["ranks"] = ranks;
  }
  write_record(metrics_, record);
  if (events_) {
    const double now = wall_clock_s();
    for (const auto& [tag, value] : {std::pair<const char*, double>{"train/loss", s.loss},
                                     {"train/lr", s.lr},
                                     {"train/samples_per_s", s.samples_per_s},
                                     {"step/ms_per_step", s.ms_per_step},
                                     {"step/data_wait_ms", s.data_wait_ms},
                                     {"step/backward_ms", s.backward_ms},
                                     {"step/exposed_comm_ms", s.exposed_comm_ms},
                                     {"amp/loss_scale", s.loss_scale}}) {
      events_->add_scalar(tag, value, s.step, now);
    }
    if (s.grad_norm >= 0) events_->add_scalar("train/grad_norm", s.grad_norm, s.step, now);
    for (const auto& [name, ms] : s.phases_ms) {
      std::string tag = "phase/";
      tag += name;
      tag += "_ms";
      events_->add_scalar(tag, ms, s.step, now);
    }
    add_rank_scalars(*events_, s.ranks, s.step, now);
    events_->flush();
  }
}

void RunReport::end_epoch() {
  if (bar_) bar_->finish();
  bar_.reset();
}

void RunReport::evaluation(int64_t epoch, int64_t step, double accuracy, double train_s) {
  if (!lead_) return;
  message("epoch " + std::to_string(epoch) + " step " + std::to_string(step) + ": test accuracy " +
          format("%.2f%% (after %.1f s of training)", accuracy, train_s));
  write_record(metrics_,
               {{"time", wall_clock_s()}, {"epoch", epoch}, {"step", step}, {"accuracy", accuracy}, {"seconds", train_s}});
  if (events_) {
    events_->add_scalar("eval/accuracy", accuracy, step);
    events_->flush();
  }
}

void RunReport::memory(int64_t step, const std::vector<memory::MemoryReport>& reports) {
  if (!lead_) return;
  nlohmann::json ranks = nlohmann::json::array();
  for (const auto& r : reports) {
    ranks.push_back({{"rank", r.rank},
                     {"peak_bytes", r.allocator.peak_bytes},
                     {"parameter_bytes", r.parameter_bytes},
                     {"gradient_bytes", r.gradient_bytes},
                     {"optimizer_state_bytes", r.optimizer_state_bytes},
                     {"peak_activation_bytes", r.peak_activation_bytes}});
  }
  write_record(metrics_, {{"time", wall_clock_s()}, {"event", "memory"}, {"step", step}, {"ranks", ranks}});
}

void RunReport::advice(int64_t step, const std::vector<profiler::Advice>& advice) {
  if (!lead_) return;
  nlohmann::json found = nlohmann::json::array();
  for (const auto& a : advice) found.push_back({{"verdict", a.verdict}, {"evidence", a.evidence}, {"action", a.action}});
  write_record(metrics_, {{"time", wall_clock_s()}, {"event", "advice"}, {"step", step}, {"advice", found}});
}

void RunReport::skipped_samples(int64_t step, int64_t skipped, int64_t read, const std::vector<std::string>& why,
                                double warn_share) {
  if (!lead_ || skipped == 0) return;
  const double share = read > 0 ? static_cast<double>(skipped) / static_cast<double>(read) : 1.0;
  std::string line = "data: " + std::to_string(skipped) + " of " + std::to_string(read) +
                     " samples read were bad and skipped (data.on_error: skip)";
  for (size_t i = 0; i < why.size(); ++i) line += (i == 0 ? "; the first: " : "; ") + why[i];
  if (static_cast<int64_t>(why.size()) < skipped) line += "; ...";
  message(line);
  write_record(metrics_, {{"time", wall_clock_s()}, {"event", "skipped_samples"}, {"step", step},
                          {"skipped", skipped}, {"read", read}, {"first", why}});
  if (share > warn_share) {
    std::fprintf(stderr, "warning: %s of the samples read were bad and skipped, more than %s: the data set looks "
                         "damaged; check the files named above (data.on_error: raise stops at the first)\n",
                 format("%.1f%%", 100 * share, 0).c_str(), format("%.1f%%", 100 * warn_share, 0).c_str());
    std::fflush(stderr);
  }
}

void RunReport::message(const std::string& text) {
  if (!lead_) return;
  // On a terminal the bar's line is redrawn in place: start a fresh line, and
  // the next advance redraws the bar below the message.
  std::printf("%s%s%s", bar_ ? "\r\033[K" : "", text.c_str(), text.empty() || text.back() != '\n' ? "\n" : "");
  std::fflush(stdout);
}

void RunReport::summary(const TrainResult& r, double target_accuracy) {
  if (!lead_) return;
  std::string line = "done: " + std::to_string(r.steps) + " steps in " +
                     format("%.1f s, %.0f samples/s", r.seconds, r.samples_per_s);
  if (r.accuracy >= 0) line += format(", test accuracy %.2f%%", r.accuracy, 0);
  if (target_accuracy > 0) {
    line += r.time_to_target_s >= 0
                ? format(", %.2f%% reached after %.1f s of training", target_accuracy, r.time_to_target_s)
                : format(", %.2f%% not reached", target_accuracy, 0);
  }
  message(line);
}

}  // namespace paisoar::train
