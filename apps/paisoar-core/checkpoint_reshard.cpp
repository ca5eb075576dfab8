// reshard_checkpoint: a Trainer checkpoint rewritten offline for another
// layout by the online resume itself: the target's ranks run as threads in
// this process, each resuming the source as a Trainer would and writing what
// it then holds, so the offline checkpoint is what an online resume holds.
#include "apps/paisoar-core/checkpoint_reshard.h"

#include <c10/util/Exception.h>
#include <torch/torch.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <mutex>
#include <thread>

#include "paisoar/checkpoint/checkpoint_manager.h"
#include "paisoar/comm/communicator.h"
#include "paisoar/comm/store.h"
#include "paisoar/error.h"
#include "paisoar/format/safetensors.h"
#include "paisoar/train/config_schema.h"
#include "paisoar/train/trainer.h"
#include "paisoar/train/zoo.h"

namespace paisoar::app {

using namespace paisoar::train;

std::string reshard_checkpoint(const std::string& source, const std::string& target,
                               const std::vector<std::string>& overrides, int world) {
  format::FileSystem& files_on = *format::local_file_system();
  TORCH_CHECK_VALUE(world >= 1, "reshard: --ranks is ", world, "; give 1 or more");
  const format::FileKind there = files_on.status(target).kind;
  TORCH_CHECK(there == format::FileKind::Missing || (there == format::FileKind::Directory && files_on.list(target).empty()),
              "reshard: '", target, "' exists and is not an empty directory; give a new one (nothing in it is "
              "overwritten)");
  checkpoint::CheckpointOptions reader;
  reader.dir = source;
  reader.rank = 1;  // reads only
  const checkpoint::CheckpointManager manager(reader);
  const auto files = manager.list();
  TORCH_CHECK(!files.empty(), "reshard: '", source, "' holds no checkpoint (step-<12 digits>.safetensors)");
  const format::TensorFile newest = format::load_safetensors(files_on, files.back().path);
  const auto saved = newest.metadata.find("train.config");
  TORCH_CHECK(saved != newest.metadata.end(), "reshard: '", files.back().path, "' has no 'train.config' in its "
              "metadata: it was not written by paisoar's Trainer");

  // The run that wrote it, in the layout asked for (the layout keys start from
  // their defaults: no parallelism, no ZeRO), resuming from `source`.
  TrainConfig config;
  ConfigSchema schema = schema_for(config);
  schema.load_yaml(saved->second, files.back().path + " (its train.config)");
  const TrainConfig defaults;
  config.parallel = defaults.parallel;
  config.zero.stage = defaults.zero.stage;
  config.train.grad_accumulation = defaults.train.grad_accumulation;
  for (const auto& o : overrides) schema.set(o);
  // The runs' reports (metrics.jsonl) go to a scratch directory, removed after.
  std::string scratch = (std::filesystem::temp_directory_path() / "paisoar-reshard-XXXXXX").string();
  TORCH_CHECK(::mkdtemp(scratch.data()) != nullptr, "reshard: cannot make a scratch directory under ",
              std::filesystem::temp_directory_path().string(), ": ", std::strerror(errno));
  config.run_dir = scratch;
  config.checkpoint.dir = source;
  config.checkpoint.resume = true;
  config.logging.tensorboard = "";
  config.profiler.enabled = false;
  config.profiler.memory = false;
  config.memory.predict = false;
  validate(config, world);
  check_reference_layout(config);

  std::vector<std::string> written(static_cast<size_t>(world));
  std::vector<std::string> errors(static_cast<size_t>(world));
  std::mutex build;  // make_task seeds torch's global generator
  comm::Store store = comm::Store::hash();
  comm::CommOptions options;
  options.backend = comm::Backend::Threads;
  std::vector<std::thread> ranks;
  for (int r = 0; r < world; ++r) {
    ranks.emplace_back([&, r] {
      try {
        Trainer trainer(config, comm::Communicator::create(store, r, world, options));
        TrainTask task;
        {
          std::lock_guard<std::mutex> lock(build);
          task = make_task(config, trainer.tensor_group());
        }
        written[static_cast<size_t>(r)] = trainer.reshard(task, target);
      } catch (const std::exception& e) {
        errors[static_cast<size_t>(r)] = error_text(e);
      }
    });
  }
  for (auto& t : ranks) t.join();
  std::error_code ignored;
  std::filesystem::remove_all(scratch, ignored);
  for (const auto& e : errors) TORCH_CHECK(e.empty(), "reshard: ", e);
  return written[0];
}

}  // namespace paisoar::app
