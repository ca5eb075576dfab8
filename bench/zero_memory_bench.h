// The ZeRO section of `paisoar bench memory` (issue #7): per-rank memory and
// step time of a ~100M-parameter GPT trained with AdamW by `nproc` rank
// processes under plain DDP and ZeRO stages 1, 2 and 3, and by 2 x `nproc`
// ranks as a 2-stage pipeline over `nproc` data ranks under DDP and ZeRO-3
// (each rank's bytes per parameter of its stage), against ZeRO's
// bytes-per-parameter formulas (docs/ZERO.md).
#pragma once

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include <string>
#include <vector>

#include "bench/zero_memory_run.h"

namespace paisoar::app {

struct ZeroMemoryBenchOptions {
  bench::ZeroMemoryRun run;  // its mode is set per configuration
  int nproc = 2;
  std::vector<std::string> modes = {"ddp", "zero1", "zero2", "zero3", "ddp_pp2", "zero3_pp2"};
};

// Registers the section's --zero-* and --nproc options on `cmd`.
void add_zero_memory_options(CLI::App& cmd, ZeroMemoryBenchOptions& o);

// Runs each mode in fresh rank processes under `paisoar launch` (each rank's
// own peak), prints the table and returns the JSON of the section.
nlohmann::json zero_memory_section(const ZeroMemoryBenchOptions& o);

}  // namespace paisoar::app
