// `paisoar convert`: IDX files (`idx`) or an image folder (`folder`) into a
// directory of record shards that ShardDataset reads, written by worker
// threads, with a progress bar and a summary line at the end.
#include <chrono>
#include <cstdio>
#include <memory>
#include <thread>

#include "apps/paisoar-core/commands.h"
#include "paisoar/data/convert.h"

namespace paisoar::app {
namespace {

struct ConvertArgs {
  std::string images, labels;  // idx
  std::string root;            // folder
  std::string out;
  data::ConvertOptions options;
  bool quiet = false;
};

void add_common_options(CLI::App* cmd, ConvertArgs& a) {
  cmd->add_option("--out", a.out, "output directory for the shards and dataset.json")->required();
  cmd->add_option("--records-per-shard", a.options.records_per_shard, "records in each shard")
      ->check(CLI::Range(int64_t{1}, int64_t{1} << 40));
  cmd->add_option("--workers", a.options.workers, "threads writing shards (default: the cores, at most 8)")->check(CLI::Range(int64_t{1}, int64_t{1024}));
  cmd->add_flag("--quiet", a.quiet, "no progress bar");
}

int print_summary(const data::ConvertResult& r, const std::string& out, double seconds) {
  std::printf("paisoar convert: %lld records in %lld shards, %.1f MB, %.2f s (%.0f records/s) -> %s\n",
              static_cast<long long>(r.records), static_cast<long long>(r.shards), r.bytes / 1e6, seconds,
              seconds > 0 ? r.records / seconds : 0.0, out.c_str());
  return 0;
}

}  // namespace

Command add_convert_command(CLI::App& app) {
  auto a = std::make_shared<ConvertArgs>();
  a->options.workers = std::max<int64_t>(1, std::min<int64_t>(8, std::thread::hardware_concurrency()));
  auto* cmd = app.add_subcommand("convert", "IDX files or an image folder into record shards for fast loading");
  cmd->require_subcommand(1);
  auto* idx = cmd->add_subcommand("idx", "IDX images and labels (MNIST, Fashion-MNIST) into PGM records");
  idx->add_option("--images", a->images, "IDX images, uint8 [N, H, W] (.gz or not)")->required()->check(CLI::ExistingFile);
  idx->add_option("--labels", a->labels, "IDX labels, [N]")->required()->check(CLI::ExistingFile);
  add_common_options(idx, *a);
  auto* folder = cmd->add_subcommand("folder", "root/<class>/<image>.{jpg,jpeg,png}; bytes stored as they are");
  folder->add_option("--root", a->root, "the image folder, one subfolder per class")
      ->required()
      ->check(CLI::ExistingDirectory);
  add_common_options(folder, *a);
  return [a, idx](int, char**) {
    a->options.progress = !a->quiet;
    const auto start = std::chrono::steady_clock::now();
    const auto result = idx->parsed() ? data::convert_idx(a->images, a->labels, a->out, a->options)
                                      : data::convert_image_folder(a->root, a->out, a->options);
    return print_summary(result, a->out,
                         std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
  };
}

}  // namespace paisoar::app
