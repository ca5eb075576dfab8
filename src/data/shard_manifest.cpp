// dataset.json, the manifest that marks a converted data set as complete:
//   {"format": "paisoar-shards-v1", "classes": [...], "records": N,
//    "shards": [{"file": "shard-000000.tar", "records": n0}, ...]}
// Written with nlohmann/json through an AtomicFile; read strictly.
#include <nlohmann/json.hpp>

#include <c10/util/Exception.h>

#include <filesystem>
#include <limits>
#include <numeric>
#include <set>
#include <stdexcept>

#include "paisoar/data/data_error.h"
#include "paisoar/data/record_shards.h"
#include "paisoar/error.h"
#include "src/util/atomic_file.h"
#include "src/util/input_file.h"
#include "src/util/json_text.h"
#include "src/util/text_check.h"

namespace paisoar::data {
namespace {

constexpr const char* kFormat = "paisoar-shards-v1";
// A manifest names shards and classes; 256 MiB is far beyond any real one.
constexpr uint64_t kMaxManifestBytes = uint64_t{1} << 28;

std::string manifest_path(const std::string& dir) { return dir + "/dataset.json"; }

// A shard name is a plain file name inside the data set directory.
bool plain_file_name(const std::string& name) {
  return !name.empty() && name != "." && name != ".." && name.find('/') == std::string::npos;
}

}  // namespace

void write_manifest(const std::string& dir, const ShardManifest& manifest) {
  if (manifest.shards.size() != manifest.records.size()) {
    C10_THROW_ERROR(ValueError, "write_manifest: " + std::to_string(manifest.shards.size()) +
                                " shards but " + std::to_string(manifest.records.size()) +
                                " record counts; give one count per shard");
  }
  nlohmann::json shards = nlohmann::json::array();
  for (size_t i = 0; i < manifest.shards.size(); ++i) {
    if (!plain_file_name(manifest.shards[i]) || manifest.records[i] < 0) {
      C10_THROW_ERROR(ValueError, "write_manifest: shard '" + manifest.shards[i] + "' with " +
                                  std::to_string(manifest.records[i]) +
                                  " records: use a file name without '/' and a count >= 0");
    }
    shards.push_back({{"file", manifest.shards[i]}, {"records", manifest.records[i]}});
  }
  const nlohmann::json j = {
      {"format", kFormat},
      {"classes", manifest.classes},
      {"records", std::accumulate(manifest.records.begin(), manifest.records.end(), int64_t{0})},
      {"shards", shards}};
  util::AtomicFile out(manifest_path(dir));
  out.write(j.dump(2) + "\n");
  out.commit();
}

ShardManifest read_manifest(const std::string& dir) {
  const std::string path = manifest_path(dir);
  std::error_code ec;
  if (!std::filesystem::exists(path, ec)) {
    throw DataError("'" + path + "' not found: '" + dir +
                    "' is not a converted data set, or its conversion did not finish; "
                    "run paisoar convert first");
  }
  std::string text;
  try {
    text = util::InputFile(path, "data set manifest").read_all(kMaxManifestBytes);
  } catch (const c10::Error& e) {
    throw DataError(error_text(e));
  }
  auto bad = [&](const std::string& what) {
    return DataError("data set manifest '" + path + "' is malformed: " + what +
                     "; re-run paisoar convert to rebuild the data set");
  };
  ShardManifest m;
  try {
    const nlohmann::json j = util::parse_json_text(text);
    if (!j.is_object()) throw bad("it holds " + util::json_kind(j) + ", not a JSON object");
    if (util::json_string(util::json_member(j, "format", "\"format\""), "\"format\"") != kFormat) {
      throw bad(std::string("\"format\" is not \"") + kFormat + "\"");
    }
    m.classes = util::json_strings(util::json_member(j, "classes", "\"classes\""), "\"classes\"");
    // Without classes the loader could not check a label against them.
    if (m.classes.empty()) throw bad("\"classes\" is empty (a data set has at least one class)");
    std::set<std::string> classes;
    for (const auto& c : m.classes) {
      if (!classes.insert(c).second) throw bad("class " + util::shown(c) + " is listed twice in \"classes\"");
    }
    const nlohmann::json& shards = util::json_member(j, "shards", "\"shards\"");
    if (!shards.is_array()) throw bad("\"shards\" must be a list, got " + util::json_kind(shards));
    std::set<std::string> files;
    int64_t total = 0;
    for (size_t i = 0; i < shards.size(); ++i) {
      const std::string which = " of shard " + std::to_string(i);
      m.shards.push_back(util::json_string(util::json_member(shards[i], "file", "\"file\"" + which), "\"file\"" + which));
      m.records.push_back(
          util::json_integer(util::json_member(shards[i], "records", "\"records\"" + which), "\"records\"" + which));
      if (!plain_file_name(m.shards.back()) || m.records.back() < 0) {
        throw bad("shard " + util::shown(m.shards.back()) + " with " + std::to_string(m.records.back()) + " records");
      }
      if (!files.insert(m.shards.back()).second) {
        throw bad("shard " + util::shown(m.shards.back()) + " is listed twice in \"shards\"");
      }
      if (m.records.back() > std::numeric_limits<int64_t>::max() - total) {
        throw bad("the shards' \"records\" add up to more than 2^63");
      }
      total += m.records.back();
    }
    // The total is optional (the shards' counts give it), but must agree.
    if (j.contains("records") && util::json_integer(j.at("records"), "\"records\"") != total) {
      throw bad("\"records\" is " + j.at("records").dump() + " but the shards add up to " + std::to_string(total));
    }
  } catch (const util::JsonTextError& e) {
    throw bad(e.what());
  }
  return m;
}

}  // namespace paisoar::data
