// Reading one sharded ZeRO checkpoint: which files must be there, that they
// come from one save, and the full parameters and optimizer fields rebuilt
// from the pieces each rank wrote.
#include "src/zero/shard_set.h"

#include <c10/util/Exception.h>
#include <nlohmann/json.hpp>
#include <torch/torch.h>

#include <algorithm>
#include <iostream>
#include <regex>
#include <set>

#include "paisoar/checkpoint/training_state.h"
#include "paisoar/format/safetensors.h"
#include "src/util/json_text.h"
#include "src/util/text_check.h"

namespace paisoar::zero::detail {
namespace {


std::string join(const std::vector<std::string>& items) {
  std::string out;
  for (const auto& s : items) out += (out.empty() ? "" : ", ") + s;
  return out;
}

const std::string& meta(const format::TensorFile& ck, const std::string& key) {
  auto it = ck.metadata.find(key);
  TORCH_CHECK(it != ck.metadata.end(), "'", ck.source, "' is not a ZeRO shard file (no '", key,
              "' in its metadata)");
  return it->second;
}

// "<prefix><name>@<begin>[.<field>]" -> name, begin, field.
bool parse_piece_key(const std::string& key, const std::string& prefix, std::string& name,
                     int64_t& begin, std::string& field, const std::string& source) {
  if (key.rfind(prefix, 0) != 0) return false;
  const size_t at = key.rfind('@');
  if (at == std::string::npos || at < prefix.size()) return false;
  name = key.substr(prefix.size(), at - prefix.size());
  const size_t dot = key.find('.', at);
  const std::string digits = key.substr(at + 1, dot == std::string::npos ? std::string::npos : dot - at - 1);
  TORCH_CHECK(!digits.empty() && digits.size() <= 18 && digits.find_first_not_of("0123456789") == std::string::npos,
              "'", source, "': tensor ", util::shown(key), " names no offset after its '@'; the shard file is damaged: ",
              "restore it from the same save");
  begin = std::stoll(digits);
  field = dot == std::string::npos ? "" : key.substr(dot + 1);
  return true;
}

}  // namespace

std::string shard_file_name(int rank, int world) {
  return "zero-" + std::to_string(rank) + "-of-" + std::to_string(world) + ".safetensors";
}

ShardSet read_shard_set(format::FileSystem& files_on, const std::string& dir) {
  TORCH_CHECK(files_on.status(dir).kind == format::FileKind::Directory, "ZeRO checkpoint directory '", dir,
              "' does not exist");
  // At most 6 digits: a million ranks, and no overflow in stoi for a name that lies.
  const std::regex pattern(R"(zero-(\d{1,6})-of-(\d{1,6})\.safetensors)");
  std::map<int, std::set<int>> ranks_by_world;
  for (const auto& name : files_on.list(dir)) {
    std::smatch m;
    if (std::regex_match(name, m, pattern)) ranks_by_world[std::stoi(m[2])].insert(std::stoi(m[1]));
  }
  TORCH_CHECK(!ranks_by_world.empty(), "'", dir, "' holds no ZeRO shard files (zero-<rank>-of-<world>.safetensors); "
              "was the checkpoint written by save_sharded?");
  if (ranks_by_world.size() > 1) {
    std::vector<std::string> saves;
    for (const auto& [w, ranks] : ranks_by_world) {
      saves.push_back(std::to_string(ranks.size()) + " file(s) of a " + std::to_string(w) + "-rank save");
    }
    TORCH_CHECK(false, "'", dir, "' mixes shards of several saves (", join(saves),
                "); keep one sharded checkpoint per directory");
  }
  ShardSet set;
  set.dir = dir;
  set.world = ranks_by_world.begin()->first;
  const auto& present = ranks_by_world.begin()->second;
  TORCH_CHECK(*present.rbegin() < set.world, "'", dir, "' holds ", shard_file_name(*present.rbegin(), set.world),
              ", whose rank is outside a ", set.world, "-rank save; remove the file");
  if (static_cast<int>(present.size()) != set.world) {
    std::vector<std::string> missing;  // the first few, named
    for (int r = 0; r < set.world && missing.size() < 4; ++r) {
      if (!present.count(r)) missing.push_back(shard_file_name(r, set.world));
    }
    const size_t more = static_cast<size_t>(set.world) - present.size() - missing.size();
    TORCH_CHECK(false, "ZeRO checkpoint '", dir, "' is incomplete: missing ", join(missing),
                more > 0 ? " and " + std::to_string(more) + " more" : std::string(), " of the ", set.world,
                " shard files; copy them from the ranks that wrote them (every rank writes its own)");
  }

  std::vector<format::TensorFile> files;
  for (int r = 0; r < set.world; ++r) files.push_back(format::load_safetensors(files_on, dir + "/" + shard_file_name(r, set.world)));
  const std::string& run = meta(files[0], "zero.run");
  std::vector<std::string> foreign;
  for (int r = 1; r < set.world; ++r) {
    if (meta(files[r], "zero.run") != run) foreign.push_back(shard_file_name(r, set.world));
  }
  TORCH_CHECK(foreign.empty(), "ZeRO checkpoint '", dir, "' mixes two saves: ", join(foreign),
              " come from another save than ", shard_file_name(0, set.world), " (run ids differ); restore the "
              "files of one save");
  set.metadata = files[0].metadata;
  set.dtype = meta(files[0], "zero.dtype");
  nlohmann::json params;
  try {
    params = util::parse_json_text(meta(files[0], "zero.params"));
    for (const auto& entry : params) {
      util::json_string(entry.at(0), "a parameter's name");
      entry.at(1).get<std::vector<int64_t>>();
    }
  } catch (const std::exception& e) {  // util::JsonTextError or nlohmann's type and range errors
    const auto* json_error = dynamic_cast<const nlohmann::json::exception*>(&e);
    TORCH_CHECK(false, "'", files[0].source, "': metadata 'zero.params' is not a list of [name, shape] (",
                json_error ? util::json_error_text(*json_error) : std::string(e.what()),
                "); the shard file is damaged: restore it from the same save");
  }
  for (const auto& entry : params) {
    const std::string name = entry.at(0).get<std::string>();
    set.names.push_back(name);
    set.shapes[name] = entry.at(1).get<std::vector<int64_t>>();
    int64_t numel = 1;
    for (int64_t d : set.shapes[name]) numel *= d;
    set.params[name] = torch::zeros({numel}, torch::kFloat);
  }
  std::map<std::string, int64_t> covered;
  for (const auto& file : files) {
    for (const auto& [key, t] : file.tensors) {
      std::string name, field;
      int64_t begin = 0;
      if (parse_piece_key(key, "model.", name, begin, field, file.source)) {
        auto it = set.params.find(name);
        TORCH_CHECK(it != set.params.end() && begin >= 0 && begin + t.numel() <= it->second.numel(),
                    "'", file.source, "': piece '", key, "' lies outside the saved parameters");
        it->second.narrow(0, begin, t.numel()).copy_(t.reshape({-1}));
        covered[name] += t.numel();
      } else if (parse_piece_key(key, "optim.", name, begin, field, file.source)) {
        if (t.dim() == 0) {
          set.scalars[name][field] = t;
          continue;
        }
        auto& full = set.elementwise[name][field];
        if (!full.defined()) full = torch::zeros({set.params.at(name).numel()}, t.options());
        full.narrow(0, begin, t.numel()).copy_(t.reshape({-1}));
      } else if (key.rfind("model.", 0) == 0 && &file == &files[0]) {
        set.buffers[key.substr(6)] = t;
      }
    }
  }
  for (const auto& name : set.names) {
    TORCH_CHECK(covered[name] == set.params[name].numel(), "ZeRO checkpoint '", dir, "': the shard files hold ",
                covered[name], " of the ", set.params[name].numel(), " elements of parameter '", name,
                "'; a shard file is damaged or from another save");
  }
  return set;
}

ShardSet shard_set_of_whole(const format::TensorFile& whole, const std::vector<std::string>& order) {
  std::vector<std::string> trainable = order;
  if (const auto it = whole.metadata.find(checkpoint::kOptimizerNamesKey); it != whole.metadata.end()) {
    try {
      trainable = util::json_strings(util::parse_json_text(it->second), "its value");
    } catch (const util::JsonTextError& e) {
      TORCH_CHECK(false, "'", whole.source, "': metadata '", checkpoint::kOptimizerNamesKey, "' is not a list of names (",
                  e.what(), "); the checkpoint is damaged, remove it to resume from the one before");
    }
  }
  TORCH_CHECK(whole.tensors.count("optim.archive") == 0, "'", whole.source, "' holds its optimizer as one archive ",
              "(an optimizer that does not save in torch::optim's layout), which cannot be split by parameter; ",
              "resume it with zero.stage: 0");
  ShardSet set;
  set.dir = whole.source;
  set.world = 1;
  set.metadata = whole.metadata;
  std::map<std::string, size_t> index_of;
  for (const auto& name : trainable) {
    TORCH_CHECK(!name.empty(), "'", whole.source, "': its optimizer holds a tensor that is not a parameter of its ",
                "model, so its state cannot be resharded by name; resume it with zero.stage: 0");
    const auto it = whole.tensors.find("model." + name);
    TORCH_CHECK(it != whole.tensors.end(), "'", whole.source, "' has no tensor 'model.", name,
                "'; it holds another model: resume with the model it was written by");
    index_of[name] = set.names.size();
    set.names.push_back(name);
    set.shapes[name] = it->second.sizes().vec();
    set.params[name] = it->second.to(torch::kFloat).reshape({-1}).clone();
    set.dtype = c10::toString(it->second.scalar_type());
  }
  for (const auto& [key, t] : whole.tensors) {
    if (key.rfind("model.", 0) == 0 && !index_of.count(key.substr(6))) set.buffers[key.substr(6)] = t;
    if (key.rfind("optim.", 0) != 0) continue;
    const size_t dot = key.find('.', 6);
    const std::string digits = key.substr(6, dot == std::string::npos ? std::string::npos : dot - 6);
    const bool numbered = dot != std::string::npos && !digits.empty() && digits.size() <= 9 &&
                          digits.find_first_not_of("0123456789") == std::string::npos;
    TORCH_CHECK(numbered && std::stoul(digits) < trainable.size(), "'", whole.source, "': optimizer tensor ",
                util::shown(key), " names no parameter of this model (it trains ", trainable.size(),
                "); it holds another model or is damaged");
    const std::string& name = trainable[std::stoul(digits)];
    const std::string field = key.substr(dot + 1);
    if (t.dim() == 0) {
      set.scalars[name][field] = t;
    } else {
      TORCH_CHECK(t.numel() == set.params.at(name).numel(), "'", whole.source, "': optimizer tensor ",
                  util::shown(key), " has ", t.numel(), " elements, parameter '", name, "' ",
                  set.params.at(name).numel(), "; it holds another model or is damaged");
      set.elementwise[name][field] = at::isFloatingType(t.scalar_type()) ? t.to(torch::kFloat).reshape({-1})
                                                                         : t.reshape({-1});
    }
  }
  return set;
}

void append_part(ShardSet& into, ShardSet part) {
  if (into.dir.empty()) {
    into.dir = part.dir;
    into.world = part.world;
    into.metadata = part.metadata;
    into.dtype = part.dtype;
  } else {
    into.dir += ", " + part.dir;
    if (into.dtype.empty()) into.dtype = part.dtype;
  }
  for (const auto& name : part.names) {
    if (into.params.count(name)) {
      // A parameter two stages hold (a tied embedding): the copies train alike, so they are equal.
      TORCH_CHECK(into.shapes.at(name) == part.shapes.at(name) && torch::equal(into.params.at(name), part.params.at(name)),
                  "'", part.dir, "' and '", into.dir, "' both hold parameter '", name,
                  "' with different values; they are not parts of one model");
      continue;
    }
    into.names.push_back(name);
    into.shapes[name] = part.shapes.at(name);
    into.params[name] = part.params.at(name);
  }
  for (auto& [name, fields] : part.elementwise) into.elementwise.emplace(name, std::move(fields));
  for (auto& [name, fields] : part.scalars) into.scalars.emplace(name, std::move(fields));
  for (auto& [name, b] : part.buffers) into.buffers[name] = std::move(b);
}


ModelNames names_of(const torch::nn::Module& module) {
  ModelNames model;
  for (const auto& p : module.named_parameters()) {
    if (!p.value().requires_grad()) continue;
    model.params.push_back(p.key());
    model.shapes.push_back(p.value().sizes().vec());
  }
  for (const auto& b : module.named_buffers()) {
    if (b.value().defined()) model.buffers.emplace_back(b.key(), b.value().sizes().vec());
  }
  return model;
}

void keep_part(ShardSet& set, const ModelNames& part) {
  std::vector<std::string> problems;
  for (size_t i = 0; i < part.params.size(); ++i) {
    const auto it = set.shapes.find(part.params[i]);
    if (it == set.shapes.end()) {
      problems.push_back("missing '" + part.params[i] + "'");
    } else if (it->second != part.shapes[i]) {
      problems.push_back("'" + part.params[i] + "' has shape " + c10::str(c10::IntArrayRef(it->second)) +
                         " in the checkpoint, " + c10::str(c10::IntArrayRef(part.shapes[i])) + " in this rank's part");
    }
  }
  TORCH_CHECK(problems.empty(), "checkpoint '", set.dir, "' does not hold this rank's part of the model: ",
              join(problems), "; resume with the model (and parallel.tensor) it was written with");
  ShardSet kept;
  kept.dir = set.dir;
  kept.world = set.world;
  kept.metadata = set.metadata;
  kept.dtype = set.dtype;
  for (const auto& name : part.params) {
    kept.names.push_back(name);
    kept.shapes[name] = set.shapes.at(name);
    kept.params[name] = set.params.at(name);
    if (auto it = set.elementwise.find(name); it != set.elementwise.end()) kept.elementwise[name] = it->second;
    if (auto it = set.scalars.find(name); it != set.scalars.end()) kept.scalars[name] = it->second;
  }
  for (const auto& [name, shape] : part.buffers) {
    if (auto it = set.buffers.find(name); it != set.buffers.end()) kept.buffers[name] = it->second;
  }
  set = std::move(kept);
}

format::TensorFile whole_of_shard_set(ShardSet set, const torch::nn::Module& module,
                                      const torch::optim::Optimizer& optimizer) {
  const ModelNames model = names_of(module);
  torch::ScalarType dtype = torch::kFloat;
  for (const auto& p : module.parameters()) {
    if (p.requires_grad()) dtype = p.scalar_type();
  }
  std::vector<size_t> group_sizes;
  for (const auto& g : optimizer.param_groups()) group_sizes.push_back(g.params().size());
  return whole_of_shard_set(std::move(set), model, group_sizes, dtype);
}

torch::ScalarType dtype_of(const ShardSet& set) {
  for (auto t : {torch::kFloat, torch::kDouble, torch::kBFloat16, torch::kHalf}) {
    if (set.dtype == c10::toString(t)) return t;
  }
  TORCH_CHECK(false, "checkpoint '", set.dir, "': its parameters' dtype '", set.dtype,
              "' is not a floating type paisoar trains in; it is damaged");
}

ModelNames names_of(const ShardSet& set) {
  ModelNames model;
  model.params = set.names;
  for (const auto& name : set.names) model.shapes.push_back(set.shapes.at(name));
  for (const auto& [name, b] : set.buffers) model.buffers.emplace_back(name, b.sizes().vec());
  return model;
}

std::vector<format::TensorFile> shard_files_of(const ShardSet& set, int world, int stage, int64_t run) {
  TORCH_CHECK(world >= 1 && stage >= 1 && stage <= 3, "shard_files_of: world ", world, ", stage ", stage);
  nlohmann::json params = nlohmann::json::array();
  for (const auto& name : set.names) params.push_back({name, set.shapes.at(name)});
  std::vector<format::TensorFile> files(static_cast<size_t>(world));
  for (int r = 0; r < world; ++r) {
    format::TensorFile& f = files[static_cast<size_t>(r)];
    for (const char* key : {"optim.type", "optim.scalar_fields", "optim.groups"}) {
      const auto it = set.metadata.find(key);
      TORCH_CHECK(it != set.metadata.end(), "checkpoint '", set.dir, "' has no '", key, "' in its metadata");
      f.metadata[key] = it->second;
    }
    f.metadata["zero.run"] = std::to_string(run);
    f.metadata["zero.world"] = std::to_string(world);
    f.metadata["zero.rank"] = std::to_string(r);
    f.metadata["zero.stage"] = std::to_string(stage);
    f.metadata["zero.params"] = params.dump();
    f.metadata["zero.dtype"] = set.dtype;
    for (const auto& name : set.names) {
      const int64_t n = set.params.at(name).numel();
      const int64_t begin = n * r / world, end = n * (r + 1) / world;
      if (end == begin) continue;
      const std::string at = name + "@" + std::to_string(begin);
      f.tensors["model." + at] = set.params.at(name).narrow(0, begin, end - begin);
      if (auto it = set.elementwise.find(name); it != set.elementwise.end()) {
        for (const auto& [field, full] : it->second) f.tensors["optim." + at + "." + field] = full.narrow(0, begin, end - begin);
      }
      if (auto it = set.scalars.find(name); it != set.scalars.end()) {
        for (const auto& [field, value] : it->second) f.tensors["optim." + at + "." + field] = value;
      }
    }
    if (r == 0) {
      for (const auto& [name, b] : set.buffers) f.tensors["model." + name] = b;
    }
  }
  return files;
}

format::TensorFile whole_of_shard_set(ShardSet set, const ModelNames& model, const std::vector<size_t>& group_sizes,
                                      torch::ScalarType dtype) {
  const std::vector<std::string>& trainable = model.params;
  std::vector<std::string> problems;
  for (const auto& name : trainable) {
    if (!set.params.count(name)) problems.push_back("missing '" + name + "'");
  }
  for (const auto& name : set.names) {
    if (std::find(trainable.begin(), trainable.end(), name) == trainable.end()) {
      problems.push_back("unexpected '" + name + "'");
    }
  }
  TORCH_CHECK(problems.empty(), "checkpoint '", set.dir, "' does not fit this model: ", join(problems),
              "; resume with the model it was written by");
  format::TensorFile whole;
  whole.source = set.dir;
  nlohmann::json fields = nlohmann::json::array();
  for (size_t i = 0; i < trainable.size(); ++i) {
    const std::string& name = trainable[i];
    const auto& shape = set.shapes.at(name);
    whole.tensors["model." + name] = set.params.at(name).to(dtype).reshape(shape);
    const std::string prefix = "optim." + std::to_string(i) + ".";
    fields.push_back(nlohmann::json::array());
    if (auto it = set.elementwise.find(name); it != set.elementwise.end()) {
      for (const auto& [field, flat] : it->second) {
        whole.tensors[prefix + field] =
            (at::isFloatingType(flat.scalar_type()) ? flat.to(dtype) : flat).reshape(shape);
        fields.back().push_back(field);
      }
    }
    if (auto it = set.scalars.find(name); it != set.scalars.end()) {
      for (const auto& [field, value] : it->second) {
        whole.tensors[prefix + field] = value;
        fields.back().push_back(field);
      }
    }
  }
  for (const auto& [name, b] : set.buffers) whole.tensors["model." + name] = b;
  for (const char* key : {"optim.type", "optim.scalar_fields", "optim.groups"}) {
    const auto it = set.metadata.find(key);
    TORCH_CHECK(it != set.metadata.end(), "checkpoint '", set.dir, "' has no '", key,
                "' in its metadata; restore the files of one complete save");
    whole.metadata[key] = it->second;
  }
  nlohmann::json groups;
  try {
    groups = util::parse_json_text(whole.metadata["optim.groups"]);
  } catch (const util::JsonTextError& e) {
    TORCH_CHECK(false, "checkpoint '", set.dir, "': metadata 'optim.groups' is ", e.what(),
                "; restore the files of one complete save");
  }
  TORCH_CHECK(groups.is_array() && groups.size() == group_sizes.size() &&
                  std::all_of(groups.begin(), groups.end(), [](const auto& g) { return g.is_object(); }),
              "checkpoint '", set.dir, "' has ", groups.is_array() ? groups.size() : 0, " optimizer groups, this ",
              "optimizer ", group_sizes.size(), "; build the optimizer with the groups it was saved with");
  for (size_t g = 0; g < groups.size(); ++g) groups[g]["params"] = group_sizes[g];
  whole.metadata["optim.groups"] = groups.dump();
  whole.metadata["optim.fields"] = fields.dump();
  whole.metadata[checkpoint::kOptimizerNamesKey] = nlohmann::json(trainable).dump();
  return whole;
}

}  // namespace paisoar::zero::detail
