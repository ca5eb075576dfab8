// ModelStateLayout: where and how a Trainer checkpoint holds the model and
// optimizer state, the one description that a save writes into the step file
// and that every reader (resume, verify, inspect, reshard) parses back here,
// in one place, instead of decoding metadata strings itself.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "paisoar/format/tensor_file.h"

namespace paisoar::train {

// A model-parallel part: stage `stage`'s tensor shard `shard`, saved under
// "p<stage>-t<shard>/".
struct PartId {
  int stage = 0, shard = 0;
  std::string name() const;
  // nullopt for a name that is not a part's.
  static std::optional<PartId> parse(const std::string& name);
  bool operator==(const PartId& o) const { return stage == o.stage && shard == o.shard; }
};

// How a run cuts the model: pipeline x tensor parts (1 x 1: whole on every
// rank), this rank's part, and the stages' bounds.
struct ModelCut {
  int pipeline = 1, tensor = 1;
  PartId part;               // this rank's
  std::vector<int> bounds;   // the stages' first layers and the end; empty without a pipeline
  bool split() const { return pipeline > 1 || tensor > 1; }
};

struct ModelStateLayout {
  enum class Form {
    InStepFile,  // the whole model and optimizer, in the step file itself
    Shards,      // ZeRO shards of the whole model: <dir>/zero-<rank>-of-<ranks>.safetensors
    Parts,       // one directory per part: <dir>/p<stage>-t<shard>/, part.safetensors or ZeRO shards
  };
  Form form = Form::InStepFile;
  std::string dir;  // relative to checkpoint.dir ("zero-<12-digit step>", "parts-<...>"); "" in the step file
  ModelCut cut;     // Parts: the cut (its `part` unused)

  // What a run with `cut`, its state ZeRO-sharded or not, writes at `step`.
  static ModelStateLayout of_run(const ModelCut& cut, bool sharded, int64_t step);
  // The layout a step file records. Throws c10::Error naming the file and
  // the key when its metadata is damaged.
  static ModelStateLayout of(const format::TensorFile& step_file);
  // Records it in a step file's metadata.
  void write(format::Metadata& metadata) const;

  // Parts: every part, stage-major; otherwise none.
  std::vector<PartId> parts() const;
  // A run with `run` reads its own part of this checkpoint (the same parts;
  // its pipeline then cuts at the saved bounds) rather than cutting its part
  // from the whole model.
  bool holds_part_of(const ModelCut& run) const;
  // "whole, in the step file", "ZeRO shards in zero-.../", "parts (pipeline
  // 2 x tensor 1) in parts-.../, stages from layers 0,2,4".
  std::string describe() const;
  // The prefixes of the step directories a layout may use ("zero", "parts"),
  // so old ones can be pruned whatever layout wrote them.
  static std::vector<std::string> dir_kinds();
};

// The directory of step `step`'s `kind` ("zero", "parts"): "<kind>-<12-digit step>".
std::string step_dir_name(const std::string& kind, int64_t step);

}  // namespace paisoar::train
