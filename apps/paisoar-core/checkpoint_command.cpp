// `paisoar checkpoint verify|inspect|reshard`: a Trainer checkpoint (a step
// file, or every one in a checkpoint.dir) checked byte for byte against its
// manifest; described (its step, the layout that wrote it, its parts and
// files with their sizes, how its config differs from a given one); or
// rewritten for another number of ranks or ZeRO stage into a new directory.
// None changes the source on disk.
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <map>
#include <memory>
#include <sstream>
#include <string>

#include "apps/paisoar-core/checkpoint_reshard.h"
#include "apps/paisoar-core/commands.h"
#include "paisoar/checkpoint/file_manifest.h"
#include "paisoar/error.h"
#include "paisoar/format/safetensors.h"
#include "paisoar/train/model_state_layout.h"
#include "paisoar/train/train_config.h"
#include "src/state/trainer_checkpoint.h"

namespace paisoar::app {
namespace {

namespace fs = std::filesystem;

// The step files PATH stands for, newest first, and their directory: PATH
// itself when it is one, else the step file's own directory.
std::vector<checkpoint::CheckpointFile> step_files(const std::string& path, std::string& root, const char* command) {
  std::error_code ec;
  const bool is_dir = fs::is_directory(path, ec);
  root = is_dir ? path : fs::path(path).parent_path().string();
  if (root.empty()) root = ".";
  checkpoint::CheckpointOptions options;
  options.dir = root;
  options.rank = 1;  // reads only: creates, probes and removes nothing
  auto files = checkpoint::CheckpointManager(options).list();
  std::reverse(files.begin(), files.end());
  if (!is_dir) {
    std::vector<checkpoint::CheckpointFile> one;
    for (const auto& f : files) {
      if (fs::equivalent(f.path, path, ec)) one.push_back(f);
    }
    if (one.empty()) {
      throw std::runtime_error(std::string(command) + ": '" + path +
                               "' is not a checkpoint step file (step-<12 digits>.safetensors) or a directory of them");
    }
    return one;
  }
  if (files.empty()) {
    throw std::runtime_error(std::string(command) + ": '" + path +
                             "' holds no checkpoint (step-<12 digits>.safetensors); give checkpoint.dir");
  }
  return files;
}

std::string megabytes(uint64_t bytes) {
  char text[32];
  std::snprintf(text, sizeof text, "%.2f MB", static_cast<double>(bytes) / 1e6);
  return text;
}


int verify(const std::string& path) {
  std::string root;
  const auto files = step_files(path, root, "paisoar checkpoint verify");
  int damaged = 0;
  for (const auto& f : files) {
    std::vector<std::string> problems;
    uint64_t bytes = 0;
    size_t listed = 0;
    try {
      const checkpoint::CheckpointManager::Loaded loaded{f.step, format::load_safetensors(*format::local_file_system(), f.path)};
      problems = train::checkpoint_problems(*format::local_file_system(), loaded, root, true);
      bytes = format::local_file_system()->status(f.path).size;
      const auto it = loaded.checkpoint.metadata.find(checkpoint::kFilesKey);
      if (problems.empty() && it != loaded.checkpoint.metadata.end()) {
        for (const auto& e : checkpoint::parse_file_manifest(it->second, f.path)) {
          bytes += e.bytes;
          ++listed;
        }
      }
    } catch (const std::exception& e) {
      problems.push_back(error_text(e));
    }
    if (problems.empty()) {
      std::printf("%s: OK, step %lld, %zu file(s), %s checked\n", f.path.c_str(), static_cast<long long>(f.step),
                  listed + 1, megabytes(bytes).c_str());
    } else {
      ++damaged;
      std::printf("%s: DAMAGED\n", f.path.c_str());
      for (const auto& p : problems) std::printf("  %s\n", p.c_str());
    }
  }
  std::fflush(stdout);
  if (damaged > 0) {
    std::cerr << "paisoar checkpoint verify: " << damaged << " of " << files.size()
              << " checkpoint(s) damaged (listed above); a resume skips them and uses the newest one that is OK; "
                 "remove the damaged ones\n";
    return 1;
  }
  return 0;
}

int inspect(const std::string& path, const std::string& config_path) {
  std::string root;
  const auto f = step_files(path, root, "paisoar checkpoint inspect").front();
  const auto c = format::load_safetensors(*format::local_file_system(), f.path);
  const auto meta = [&c](const std::string& key) {
    const auto it = c.metadata.find(key);
    return it == c.metadata.end() ? std::string("?") : it->second;
  };
  std::printf("checkpoint: %s\n", f.path.c_str());
  std::printf("step: %lld (epoch %s, %s samples into it; train.batch_size %s)\n", static_cast<long long>(f.step),
              meta("train.loader_epoch").c_str(), meta("train.loader_samples").c_str(),
              meta("train.batch_size").c_str());
  const std::string where = train::ModelStateLayout::of(c).describe();
  std::printf("written by: %s rank(s), zero.stage %s; model and optimizer %s\n", meta("train.world").c_str(),
              meta("train.zero_stage").c_str(), where.c_str());
  std::map<std::string, std::pair<size_t, uint64_t>> parts;  // prefix -> tensors, bytes
  for (const auto& [name, t] : c.tensors) {
    auto& part = parts[name.substr(0, name.find('.'))];
    ++part.first;
    part.second += static_cast<uint64_t>(t.numel()) * t.element_size();
  }
  std::printf("in the step file:\n");
  for (const auto& [prefix, part] : parts) {
    std::printf("  %-10s %4zu tensor(s)  %s\n", prefix.c_str(), part.first, megabytes(part.second).c_str());
  }
  const auto listed = c.metadata.find(checkpoint::kFilesKey);
  if (listed != c.metadata.end()) {
    const auto files = checkpoint::parse_file_manifest(listed->second, f.path);
    if (!files.empty()) std::printf("files (manifest):\n");
    for (const auto& e : files) {
      std::printf("  %-48s %s  crc32 %08x\n", e.path.c_str(), megabytes(e.bytes).c_str(), e.crc32);
    }
  }
  if (!config_path.empty()) {
    const auto saved = train::flat_config(meta("train.config"));
    const auto given = train::flat_config(train::dump_config(train::load_config(config_path)));
    std::vector<std::string> lines;
    for (const auto& [key, value] : given) {
      const auto it = saved.find(key);
      const std::string was = it == saved.end() ? "(not set)" : it->second;
      if (was != value) lines.push_back("  " + key + ": " + was + " in the checkpoint, " + value + " in " + config_path);
    }
    std::printf("config differences from %s: %s\n", config_path.c_str(), lines.empty() ? "none" : "");
    for (const auto& l : lines) std::printf("%s\n", l.c_str());
  }
  return 0;
}

}  // namespace

Command add_checkpoint_command(CLI::App& app) {
  struct Args {
    std::string path, config, target;
    int ranks = 1;
    int zero_stage = -1;  // -1: as in the checkpoint's config (or --set)
    std::vector<std::string> sets;
  };
  auto a = std::make_shared<Args>();
  auto* cmd = app.add_subcommand("checkpoint", "check a Trainer checkpoint against its manifest, describe it, or "
                                               "reshard it");
  cmd->require_subcommand(1);
  auto* verify_cmd = cmd->add_subcommand("verify", "every file of each checkpoint read and checked against the "
                                                   "sizes and CRC-32s its step file lists; exit 1 if one is damaged");
  verify_cmd->add_option("path", a->path, "a checkpoint.dir, or one step-<step>.safetensors in it")
      ->required()
      ->check(CLI::ExistingPath);
  auto* inspect_cmd = cmd->add_subcommand("inspect", "the newest checkpoint's step, layout, parts and files, and "
                                                     "its config's differences from --config");
  inspect_cmd->add_option("path", a->path, "a checkpoint.dir (its newest checkpoint), or one step file")
      ->required()
      ->check(CLI::ExistingPath);
  inspect_cmd->add_option("--config", a->config, "a config file to compare the checkpoint's with")
      ->check(CLI::ExistingFile);
  auto* reshard_cmd = cmd->add_subcommand("reshard", "the newest checkpoint rewritten for another layout (ranks, "
                                                     "parallel.*, zero.stage), as a resume there would hold it (a "
                                                     "resume does this by itself)");
  reshard_cmd->add_option("source", a->path, "a checkpoint.dir")->required()->check(CLI::ExistingDirectory);
  reshard_cmd->add_option("target", a->target, "a new or empty directory, the new checkpoint.dir")->required();
  reshard_cmd->add_option("--ranks", a->ranks, "the number of ranks it is for (they run as threads here)")
      ->required()
      ->check(CLI::Range(1, 256));
  reshard_cmd->add_option("--zero_stage", a->zero_stage, "the same as --set zero.stage=N")->check(CLI::Range(0, 3));
  reshard_cmd->add_option("--set", a->sets, "KEY=VALUE: the target's layout (parallel.*, zero.stage; none unless "
                                            "set) or any other key over the checkpoint's own config (repeatable)");
  return [a, verify_cmd, reshard_cmd](int, char**) {
    if (verify_cmd->parsed()) return verify(a->path);
    if (reshard_cmd->parsed()) {
      std::vector<std::string> sets = a->sets;
      if (a->zero_stage >= 0) sets.push_back("zero.stage=" + std::to_string(a->zero_stage));
      std::string changes;
      for (const auto& s : sets) changes += (changes.empty() ? "" : ", ") + s;
      std::string written;
      try {
        written = reshard_checkpoint(a->path, a->target, sets, a->ranks);
      } catch (const train::ConfigError& e) {
        std::cerr << "paisoar checkpoint reshard: " << paisoar::error_text(e) << "\n";
        return 2;
      }
      std::printf("paisoar checkpoint reshard: %s -> %s (%d rank(s)%s%s)\n", a->path.c_str(), written.c_str(),
                  a->ranks, changes.empty() ? "" : ", ", changes.c_str());
      return 0;
    }
    return inspect(a->path, a->config);
  };
}

}  // namespace paisoar::app
