// The config's region patterns against the model: the amp precision policy
// they build, and the checks after the first forward that every pattern
// (amp.fp32_modules/low_modules, activation_checkpointing) matched a region.
#pragma once

#include <string>
#include <vector>

#include "paisoar/amp/precision_regions.h"
#include "paisoar/memory/activation_checkpoint_regions.h"
#include "paisoar/train/train_config.h"

namespace paisoar::train {

amp::PrecisionPolicy policy_of(const AmpConfig& amp);

// Throws ConfigError naming the first pattern that matched none of `regions`
// (the ones the model marked), listing them.
void check_policy_matched(const amp::PrecisionPolicy& policy, const std::vector<std::string>& regions);
void check_checkpointing_matched(const memory::CheckpointRegions& regions);

}  // namespace paisoar::train
