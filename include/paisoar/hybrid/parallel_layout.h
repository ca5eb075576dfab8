// ParallelLayout: how many ways a job splits its ranks into data-parallel
// replicas, pipeline stages and tensor-parallel shards (D x P x T = world).
#pragma once

#include <string>

namespace paisoar::hybrid {

struct ParallelLayout {
  int data = 1;      // D: model replicas, each trained on its share of the batch
  int pipeline = 1;  // P: stages each replica's layers are cut into
  int tensor = 1;    // T: ranks each stage's layers are split across
  int size() const { return data * pipeline * tensor; }
  bool model_parallel() const { return pipeline > 1 || tensor > 1; }
  std::string to_string() const;  // "data 2 x pipeline 2 x tensor 1"
};

// "" when `layout` fits a world of `world_size` ranks; otherwise what is wrong
// and what to choose instead, e.g. "data 2 x pipeline 2 x tensor 2 = 8 ranks,
// but the world has 4 ranks; choose sizes whose product is 4".
std::string layout_problem(const ParallelLayout& layout, int world_size);

}  // namespace paisoar::hybrid
