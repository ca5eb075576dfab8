// `paisoar zero-consolidate DIR OUT`: the shard files of a sharded ZeRO
// checkpoint (zero-<rank>-of-<world>.safetensors) into one full safetensors
// model file.
#include <cstdio>
#include <memory>
#include <string>

#include "apps/paisoar-core/commands.h"
#include "paisoar/zero/sharded_checkpoint.h"

namespace paisoar::app {

Command add_zero_consolidate_command(CLI::App& app) {
  struct Args {
    std::string dir, out;
  };
  auto a = std::make_shared<Args>();
  auto* cmd = app.add_subcommand("zero-consolidate",
                                 "a sharded ZeRO checkpoint (one file per rank) into one full model file");
  cmd->add_option("dir", a->dir, "the directory save_sharded wrote")->required()->check(CLI::ExistingDirectory);
  cmd->add_option("out", a->out, "the .safetensors file to write (model.<name> tensors)")
      ->required()
      ->check(CLI::Validator(
          [](const std::string& out) {
            return out.empty() ? std::string("out is empty: give the file to write, e.g. full.safetensors")
                               : std::string();
          },
          "FILE", "non-empty"));
  return [a](int, char**) {
    zero::consolidate_shards(*format::local_file_system(), a->dir, a->out);
    std::printf("paisoar zero-consolidate: %s -> %s\n", a->dir.c_str(), a->out.c_str());
    return 0;
  };
}

}  // namespace paisoar::app
