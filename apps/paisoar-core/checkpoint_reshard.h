// `paisoar checkpoint reshard`: a Trainer checkpoint rewritten for another
// layout by resuming it there (Trainer::reshard) on thread-ranks.
#pragma once

#include <string>
#include <vector>

namespace paisoar::app {

// The newest checkpoint in `source` rewritten into the new or empty
// directory `target` for the layout `overrides` give ("parallel.pipeline=2",
// "zero.stage=3", ...) over `world` ranks: the checkpoint's own config with
// its layout keys (parallel.*, zero.stage, train.grad_accumulation) back at
// their defaults, then `overrides`. The ranks run as threads in this process,
// each resuming it as a Trainer would (Trainer::reshard), so what they write
// is what an online resume of that layout holds. Needs the
// training data its config names (the loader's position is checked against
// it). Returns the step file written. Throws ConfigError for a layout the
// config or the model cannot take, c10::Error when `source` holds no
// checkpoint or `target` is not empty; `source` is never changed.
std::string reshard_checkpoint(const std::string& source, const std::string& target,
                               const std::vector<std::string>& overrides, int world);

}  // namespace paisoar::app
