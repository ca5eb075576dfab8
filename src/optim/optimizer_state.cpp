// Optimizer state as named tensors. Saving runs the optimizer's own save(),
// round-trips the archive through bytes so it can be read key by key, and
// flattens it; restoring rebuilds the archive torch::optim::serialize expects
// (keyed by the current parameters) and hands it to the optimizer's load().
#include "paisoar/optim/optimizer_state.h"

#include <c10/util/Exception.h>
#include <c10/util/Type.h>
#include <nlohmann/json.hpp>
#include <torch/serialize/input-archive.h>
#include <torch/serialize/output-archive.h>

#include <cmath>
#include <cstring>
#include <set>
#include <sstream>
#include <typeinfo>

#include "src/util/json_text.h"
#include "src/util/text_check.h"
#include "src/util/torch_api.h"

namespace paisoar::optim {
namespace {

using Json = nlohmann::json;
using torch::serialize::InputArchive;
using torch::serialize::OutputArchive;

constexpr const char* kArchiveTensor = "optim.archive";

std::string type_of(const torch::optim::Optimizer& optimizer) { return c10::demangle(typeid(optimizer).name()); }

// The archive key of a parameter's state in torch::optim's save() layout.
std::string key_of(const torch::Tensor& param) { return paisoar::detail::optim_archive_key(param); }

std::vector<torch::Tensor> all_params(const torch::optim::Optimizer& optimizer) {
  std::vector<torch::Tensor> params;
  for (const auto& group : optimizer.param_groups()) {
    for (const auto& p : group.params()) params.push_back(p);
  }
  return params;
}

InputArchive reread(OutputArchive& out) {
  std::ostringstream bytes;
  out.save_to(bytes);
  std::istringstream in(bytes.str());
  InputArchive archive;
  archive.load_from(in);
  return archive;
}

// Group options: numbers, bools, strings and tuples of them (Adam's betas).
Json to_json(const c10::IValue& v, const std::string& what) {
  if (v.isDouble()) {
    TORCH_CHECK(std::isfinite(v.toDouble()), "checkpoint: optimizer option '", what, "' is ", v.toDouble(),
                "; only finite values can be saved");
    return v.toDouble();
  }
  if (v.isInt()) return v.toInt();
  if (v.isBool()) return v.toBool();
  if (v.isString()) return v.toStringRef();
  if (v.isNone()) return nullptr;
  if (v.isTuple()) {
    Json list = Json::array();
    for (const auto& e : v.toTupleRef().elements()) list.push_back(to_json(e, what));
    return list;
  }
  TORCH_CHECK(false, "checkpoint: optimizer option '", what, "' has type ", v.tagKind(),
              ", which paisoar cannot store; use numbers, bools, strings or tuples of them");
}

c10::IValue to_ivalue(const Json& j) {
  if (j.is_number_float()) return j.get<double>();
  if (j.is_number_integer()) return j.get<int64_t>();
  if (j.is_boolean()) return j.get<bool>();
  if (j.is_string()) return j.get<std::string>();
  if (j.is_null()) return c10::IValue();
  std::vector<c10::IValue> elements;
  for (const Json& e : j) elements.push_back(to_ivalue(e));
  return c10::ivalue::Tuple::create(std::move(elements));
}

// The archive an options object's serialize() reads: one entry per option.
OutputArchive options_archive(const Json& options, std::shared_ptr<torch::jit::CompilationUnit> unit) {
  OutputArchive archive = unit ? OutputArchive(std::move(unit)) : OutputArchive();
  for (const auto& [key, value] : options.items()) archive.write(key, to_ivalue(value));
  return archive;
}

const std::string& required(const format::TensorFile& checkpoint, const std::string& key) {
  auto it = checkpoint.metadata.find(key);
  TORCH_CHECK(it != checkpoint.metadata.end(), "checkpoint '", checkpoint.source, "' holds no optimizer state (no '",
              key, "' in its metadata); it was saved without an optimizer");
  return it->second;
}

Json parse(const format::TensorFile& checkpoint, const std::string& key) {
  try {
    return util::parse_json_text(required(checkpoint, key));
  } catch (const util::JsonTextError& e) {
    TORCH_CHECK(false, "checkpoint '", checkpoint.source, "': metadata '", key, "' is ", e.what(),
                "; the checkpoint is damaged: remove it to resume from the one before");
  }
}

[[noreturn]] void damaged(const std::string& source, const std::string& what) {
  TORCH_CHECK(false, "checkpoint '", source, "': ", what, "; the checkpoint is damaged: remove it to resume from the one "
              "before");
}

// The shapes the writer gives optim.groups and optim.scalar_fields, checked
// before any field is read (a const Json's operator[] on a missing key is
// undefined behaviour).
void check_layout(const std::string& source, const Json& groups, const Json& scalar_fields) {
  if (!groups.is_array()) damaged(source, "metadata 'optim.groups' is " + util::json_kind(groups) + ", not a list");
  for (size_t g = 0; g < groups.size(); ++g) {
    const Json& group = groups[g];
    if (!group.is_object() || !group.contains("params") || !group["params"].is_number_unsigned() ||
        !group.contains("options") || !group["options"].is_object()) {
      damaged(source, "metadata 'optim.groups' entry " + std::to_string(g) +
                          " is not {\"params\": <count>, \"options\": {...}}");
    }
  }
  if (!scalar_fields.is_object()) {
    damaged(source, "metadata 'optim.scalar_fields' is " + util::json_kind(scalar_fields) + ", not an object");
  }
  for (const auto& [field, kind] : scalar_fields.items()) {
    if (kind != "int" && kind != "double") {
      damaged(source, "metadata 'optim.scalar_fields' gives field " + util::shown(field) + " the kind " + kind.dump() +
                          ", not \"int\" or \"double\"");
    }
  }
}

// Checkpoints since optim.fields was added list each parameter's fields: a
// field the list names but the file lacks (or the other way round) is damage,
// not a parameter without state.
void check_fields_listed(const format::TensorFile& checkpoint,
                         const std::vector<std::vector<std::pair<std::string, torch::Tensor>>>& fields) {
  if (checkpoint.metadata.count("optim.fields") == 0) return;
  const Json listed = parse(checkpoint, "optim.fields");
  if (!listed.is_array() || listed.size() != fields.size()) {
    damaged(checkpoint.source, "metadata 'optim.fields' is not a list of " + std::to_string(fields.size()) +
                                   " parameters' field names");
  }
  const auto names = [](const std::set<std::string>& set) {
    std::string out;
    for (const auto& name : set) out += (out.empty() ? "" : ", ") + name;
    return out.empty() ? std::string("none") : out;
  };
  for (size_t i = 0; i < fields.size(); ++i) {
    std::set<std::string> want, have;
    try {
      for (const auto& name : util::json_strings(listed[i], "its entry")) want.insert(name);
    } catch (const util::JsonTextError& e) {
      damaged(checkpoint.source, "metadata 'optim.fields' for parameter " + std::to_string(i) + ": " + e.what());
    }
    for (const auto& field : fields[i]) have.insert(field.first);
    if (want != have) {
      damaged(checkpoint.source, "the optimizer state of parameter " + std::to_string(i) + " holds " +
                                     util::shown(names(have)) + " but the file lists " + util::shown(names(want)));
    }
  }
}

void restore_from_archive_tensor(torch::optim::Optimizer& optimizer, const format::TensorFile& checkpoint) {
  const torch::Tensor bytes = checkpoint.tensors.at(kArchiveTensor).contiguous();
  std::istringstream in(std::string(static_cast<const char*>(bytes.data_ptr()), bytes.numel()));
  InputArchive archive;
  archive.load_from(in);
  optimizer.load(archive);
}

}  // namespace

void add_optimizer_state(const torch::optim::Optimizer& optimizer, format::TensorMap& tensors, format::Metadata& metadata) {
  OutputArchive out;
  optimizer.save(out);
  std::ostringstream bytes;
  out.save_to(bytes);
  std::istringstream stream(bytes.str());
  InputArchive archive;
  archive.load_from(stream);
  const std::vector<std::string> top = archive.keys();
  TORCH_CHECK(!top.empty(), "checkpoint: ", type_of(optimizer),
              "::save() writes nothing, so its state cannot be checkpointed; give the optimizer save()/load()");
  metadata["optim.type"] = type_of(optimizer);

  InputArchive state, groups;
  if (!archive.try_read("state", state) || !archive.try_read("param_groups", groups)) {
    // Not torch::optim's layout: keep the archive whole.
    const std::string raw = bytes.str();
    torch::Tensor blob = torch::empty({static_cast<int64_t>(raw.size())}, torch::kUInt8);
    std::memcpy(blob.data_ptr(), raw.data(), raw.size());
    tensors[kArchiveTensor] = blob;
    return;
  }

  Json scalar_fields = Json::object();
  Json group_list = Json::array();
  Json fields_of = Json::array();  // each parameter's field names: a field missing on load is damage
  int64_t index = 0;
  for (size_t g = 0; g < optimizer.param_groups().size(); ++g) {
    for (const auto& param : optimizer.param_groups()[g].params()) {
      InputArchive fields;
      fields_of.push_back(Json::array());
      if (state.try_read(key_of(param), fields)) {
        for (const std::string& field : fields.keys()) {
          fields_of.back().push_back(field);
          c10::IValue v;
          fields.read(field, v);
          const std::string name = "optim." + std::to_string(index) + "." + field;
          if (v.isTensor()) {
            tensors[name] = v.toTensor();
          } else if (v.isInt()) {
            tensors[name] = torch::scalar_tensor(v.toInt(), torch::kInt64);
            scalar_fields[field] = "int";
          } else if (v.isDouble()) {
            tensors[name] = torch::scalar_tensor(v.toDouble(), torch::kFloat64);
            scalar_fields[field] = "double";
          } else {
            TORCH_CHECK(false, "checkpoint: ", type_of(optimizer), " state field '", field, "' has type ",
                        v.tagKind(), "; only tensors and numbers can be saved");
          }
        }
      }
      ++index;
    }
    InputArchive group, options;
    groups.read("param_groups/" + std::to_string(g), group);
    group.read("options", options);
    Json option_values = Json::object();
    for (const std::string& key : options.keys()) {
      c10::IValue v;
      options.read(key, v);
      option_values[key] = to_json(v, key);
    }
    group_list.push_back({{"params", optimizer.param_groups()[g].params().size()}, {"options", option_values}});
  }
  metadata["optim.groups"] = group_list.dump();
  metadata["optim.scalar_fields"] = scalar_fields.dump();
  metadata["optim.fields"] = fields_of.dump();
}

void restore_optimizer_state(torch::optim::Optimizer& optimizer, const format::TensorFile& checkpoint) {
  const std::string& source = checkpoint.source;
  const std::string& saved_type = required(checkpoint, "optim.type");
  TORCH_CHECK(saved_type == type_of(optimizer), "checkpoint '", source, "' holds the state of a ", saved_type,
              ", not of a ", type_of(optimizer), "; resume with the optimizer it was saved with");
  if (checkpoint.tensors.count(kArchiveTensor) != 0) return restore_from_archive_tensor(optimizer, checkpoint);

  const Json groups = parse(checkpoint, "optim.groups");
  const Json scalar_fields = parse(checkpoint, "optim.scalar_fields");
  check_layout(source, groups, scalar_fields);
  const auto& param_groups = optimizer.param_groups();
  TORCH_CHECK(groups.is_array() && groups.size() == param_groups.size(), "checkpoint '", source, "' has ",
              groups.size(), " optimizer parameter groups, the optimizer ", param_groups.size(),
              "; build the optimizer with the groups it was saved with");
  for (size_t g = 0; g < groups.size(); ++g) {
    const auto count = groups[g]["params"].get<size_t>();
    TORCH_CHECK(count == param_groups[g].params().size(), "checkpoint '", source, "': optimizer group ", g,
                " has ", count, " parameters in the file, ", param_groups[g].params().size(),
                " in the optimizer; build the optimizer over the same parameters");
  }

  // The saved fields of each parameter, checked against it.
  const std::vector<torch::Tensor> params = all_params(optimizer);
  std::vector<std::vector<std::pair<std::string, torch::Tensor>>> fields(params.size());
  for (const auto& [name, tensor] : checkpoint.tensors) {
    if (name.rfind("optim.", 0) != 0) continue;
    const size_t dot = name.find('.', 6);
    size_t index = params.size();
    try {
      if (dot != std::string::npos) index = std::stoul(name.substr(6, dot - 6));
    } catch (const std::exception&) {
    }
    TORCH_CHECK(index < params.size(), "checkpoint '", source, "' has optimizer tensor '", name,
                "' for no parameter of this optimizer (it has ", params.size(), "); the checkpoint is of another model");
    const std::string field = name.substr(dot + 1);
    TORCH_CHECK(scalar_fields.contains(field) || tensor.dim() == 0 || tensor.sizes() == params[index].sizes(),
                "checkpoint '", source, "': optimizer tensor '", name, "' has shape ", tensor.sizes(),
                ", parameter ", index, " has shape ", params[index].sizes(), "; the checkpoint is of another model");
    fields[index].emplace_back(field, tensor);
  }
  check_fields_listed(checkpoint, fields);

  OutputArchive out;
  out.write("pytorch_version", c10::IValue("1.5.0"));
  OutputArchive state(out.compilation_unit());
  for (size_t i = 0; i < params.size(); ++i) {
    if (fields[i].empty()) continue;
    OutputArchive param_state(out.compilation_unit());
    for (const auto& [field, tensor] : fields[i]) {
      const std::string kind = scalar_fields.value(field, std::string());
      if (kind == "int") {
        param_state.write(field, c10::IValue(tensor.item<int64_t>()));
      } else if (kind == "double") {
        param_state.write(field, c10::IValue(tensor.item<double>()));
      } else {
        param_state.write(field, c10::IValue(tensor.to(params[i].device())));
      }
    }
    state.write(key_of(params[i]), param_state);
  }
  out.write("state", state);
  OutputArchive group_archives(out.compilation_unit());
  group_archives.write("param_groups/size", torch::tensor(static_cast<int64_t>(groups.size())));
  for (size_t g = 0; g < groups.size(); ++g) {
    OutputArchive group(out.compilation_unit());
    const auto& group_params = param_groups[g].params();
    group.write("params/size", torch::tensor(static_cast<int64_t>(group_params.size())));
    for (size_t j = 0; j < group_params.size(); ++j) {
      group.write("params/" + std::to_string(j), c10::IValue(key_of(group_params[j])));
    }
    OutputArchive options = options_archive(groups[g]["options"], out.compilation_unit());
    group.write("options", options);
    group_archives.write("param_groups/" + std::to_string(g), group);
  }
  out.write("param_groups", group_archives);

  // torch::optim's load() reads the groups' options but (in 1.13 at least)
  // dropped them, so they are set here, after the state loaded; parsed first, so that a bad
  // option fails before anything changes.
  std::vector<std::unique_ptr<torch::optim::OptimizerOptions>> options;
  for (size_t g = 0; g < groups.size(); ++g) {
    OutputArchive saved = options_archive(groups[g]["options"], nullptr);
    InputArchive in = reread(saved);
    options.push_back(param_groups[g].options().clone());
    try {
      options.back()->serialize(in);
    } catch (const c10::Error& e) {
      TORCH_CHECK(false, "checkpoint '", source, "': the options of optimizer group ", g, " do not fit a ",
                  type_of(optimizer), " (", e.what_without_backtrace(), ")");
    }
  }
  InputArchive archive = reread(out);
  optimizer.load(archive);
  for (size_t g = 0; g < groups.size(); ++g) optimizer.param_groups()[g].set_options(std::move(options[g]));
}

}  // namespace paisoar::optim
