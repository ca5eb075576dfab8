// ModelStateLayout: its metadata keys, written and parsed here only.
#include "paisoar/train/model_state_layout.h"

#include <c10/util/Exception.h>

#include <cstdio>
#include <regex>
#include <sstream>

#include "src/state/checkpoint_metadata.h"

namespace paisoar::train {
namespace {

// The step file's keys (kept from the first layouts, so older checkpoints read).
constexpr const char* kShardKey = "train.zero_shards";
constexpr const char* kPartsKey = "train.parts";
constexpr const char* kCutKey = "train.part_layout";  // "pipeline P x tensor T"
constexpr const char* kBoundsKey = "train.pipeline_bounds";  // "0,2,3"

std::string cut_text(const ModelCut& cut) {
  return "pipeline " + std::to_string(cut.pipeline) + " x tensor " + std::to_string(cut.tensor);
}

std::string bounds_text(const std::vector<int>& bounds) {
  std::string text;
  for (int b : bounds) {
    if (!text.empty()) text += ',';
    text += std::to_string(b);
  }
  return text;
}

}  // namespace

std::string step_dir_name(const std::string& kind, int64_t step) {
  char name[40];
  std::snprintf(name, sizeof(name), "%s-%012lld", kind.c_str(), static_cast<long long>(step));
  return name;
}

std::string PartId::name() const { return "p" + std::to_string(stage) + "-t" + std::to_string(shard); }

std::optional<PartId> PartId::parse(const std::string& name) {
  std::smatch m;
  static const std::regex pattern(R"(p(\d{1,6})-t(\d{1,6}))");
  if (!std::regex_match(name, m, pattern)) return std::nullopt;
  return PartId{std::stoi(m[1]), std::stoi(m[2])};
}

ModelStateLayout ModelStateLayout::of_run(const ModelCut& cut, bool sharded, int64_t step) {
  ModelStateLayout layout;
  layout.cut = cut;
  if (cut.split()) {
    layout.form = Form::Parts;
    layout.dir = step_dir_name("parts", step);
  } else if (sharded) {
    layout.form = Form::Shards;
    layout.dir = step_dir_name("zero", step);
  }
  return layout;
}

ModelStateLayout ModelStateLayout::of(const format::TensorFile& c) {
  using detail::damaged_metadata;
  ModelStateLayout layout;
  const std::string parts = detail::named_step_dir(c, kPartsKey, "parts");
  if (parts.empty()) {
    layout.dir = detail::named_step_dir(c, kShardKey, "zero");
    layout.form = layout.dir.empty() ? Form::InStepFile : Form::Shards;
    return layout;
  }
  layout.form = Form::Parts;
  layout.dir = parts;
  const std::string& cut = detail::metadata_text(c, kCutKey);
  std::smatch m;
  if (!std::regex_match(cut, m, std::regex(R"(pipeline (\d{1,6}) x tensor (\d{1,6}))"))) {
    damaged_metadata(c, kCutKey, "not 'pipeline P x tensor T'");
  }
  layout.cut.pipeline = std::stoi(m[1]);
  layout.cut.tensor = std::stoi(m[2]);
  if (layout.cut.pipeline < 1 || layout.cut.tensor < 1) damaged_metadata(c, kCutKey, "a size below 1");
  if (const auto it = c.metadata.find(kBoundsKey); it != c.metadata.end()) {
    std::stringstream text(it->second);
    std::string item;
    while (std::getline(text, item, ',')) {
      if (item.empty() || item.size() > 9 || item.find_first_not_of("0123456789") != std::string::npos) {
        damaged_metadata(c, kBoundsKey, "not a list of layer indices");
      }
      layout.cut.bounds.push_back(std::stoi(item));
    }
    if (static_cast<int>(layout.cut.bounds.size()) != layout.cut.pipeline + 1) {
      damaged_metadata(c, kBoundsKey, "not the bounds of " + std::to_string(layout.cut.pipeline) + " stages");
    }
  }
  return layout;
}

void ModelStateLayout::write(format::Metadata& metadata) const {
  switch (form) {
    case Form::InStepFile:
      return;
    case Form::Shards:
      metadata[kShardKey] = dir;
      return;
    case Form::Parts:
      break;
  }
  metadata[kPartsKey] = dir;
  metadata[kCutKey] = cut_text(cut);
  if (!cut.bounds.empty()) metadata[kBoundsKey] = bounds_text(cut.bounds);
}

std::vector<PartId> ModelStateLayout::parts() const {
  std::vector<PartId> out;
  if (form != Form::Parts) return out;
  for (int s = 0; s < cut.pipeline; ++s) {
    for (int t = 0; t < cut.tensor; ++t) out.push_back({s, t});
  }
  return out;
}

bool ModelStateLayout::holds_part_of(const ModelCut& run) const {
  // The same parts; a pipeline resumed on as many stages cuts at the saved bounds.
  return form == Form::Parts && run.split() && cut.pipeline == run.pipeline && cut.tensor == run.tensor;
}

std::string ModelStateLayout::describe() const {
  switch (form) {
    case Form::InStepFile:
      return "whole, in the step file";
    case Form::Shards:
      return "ZeRO shards in " + dir + "/";
    case Form::Parts:
      break;
  }
  return "parts (" + cut_text(cut) + ") in " + dir + "/" +
         (cut.bounds.empty() ? "" : ", stages from layers " + bounds_text(cut.bounds));
}

std::vector<std::string> ModelStateLayout::dir_kinds() { return {"zero", "parts"}; }

}  // namespace paisoar::train
