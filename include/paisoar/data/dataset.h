// The data set interface the loader reads: random access by index, safe to call
// from many worker threads at once. IdxDataset, ImageFolder and ShardDataset
// implement it; so can a user's own data.
#pragma once

#include <torch/types.h>

#include <cstdint>
#include <string>

#include "paisoar/data/sample_rng.h"

namespace paisoar::data {

// One sample after decoding and transforms: `data` is the model input (for
// images float [C, H, W], or uint8 [C, H, W] when normalisation is left to the
// device) and `label` its class, or `target` a tensor the loss compares the
// output with (a sequence's next tokens), which the loader then batches into
// Batch::labels instead.
struct Example {
  torch::Tensor data;
  int64_t label = -1;
  torch::Tensor target;  // undefined: the target is `label`
};

class Dataset {
 public:
  virtual ~Dataset() = default;

  virtual int64_t size() const = 0;

  // Sample `index` in [0, size()). Must be thread-safe (const, no shared
  // mutable state without a lock). Random augmentation draws from `rng` only,
  // which the loader derives from (seed, epoch, index). Throws DataError for a
  // bad sample, naming it with describe(index).
  virtual Example get(int64_t index, SampleRng& rng) const = 0;

  // Labels must lie in [0, num_classes()); the loader checks. 0: not checked.
  virtual int64_t num_classes() const { return 0; }

  // Where sample `index` comes from, for error messages, e.g.
  // "/data/train/cat/001.jpg" or "shard-000003.tar record 17 (key 000017)".
  virtual std::string describe(int64_t index) const = 0;
  // Where sample `index`'s label comes from, when that is another file (IDX
  // keeps labels apart from images); describe(index) by default.
  virtual std::string describe_label(int64_t index) const { return describe(index); }
};

}  // namespace paisoar::data
