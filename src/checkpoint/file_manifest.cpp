// FileManifest: directory walk and whole-file CRC-32 (zlib's, as the
// safetensors files use) through a format::FileSystem (a FIFO is refused,
// never waited on), and the JSON form read through util::parse_json_text.
#include "paisoar/checkpoint/file_manifest.h"

#include <c10/util/Exception.h>
#include <nlohmann/json.hpp>
#include <zlib.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <map>
#include <set>

#include "src/util/json_text.h"
#include "src/util/text_check.h"

namespace paisoar::checkpoint {
namespace {

namespace stdfs = std::filesystem;

std::string hex32(uint32_t value) {
  char text[9];
  std::snprintf(text, sizeof text, "%08x", value);
  return text;
}

uint32_t file_crc32(format::FileSystem& fs, const std::string& path, uint64_t* bytes) {
  const auto in = fs.open(path, "checkpoint file");
  uLong crc = ::crc32(0, nullptr, 0);
  std::vector<unsigned char> buffer(1 << 20);
  uint64_t total = 0;
  while (const size_t n = in->read(buffer.data(), buffer.size())) {
    crc = ::crc32(crc, buffer.data(), static_cast<uInt>(n));
    total += n;
  }
  *bytes = total;
  return static_cast<uint32_t>(crc);
}

}  // namespace

std::vector<FileEntry> describe_files(format::FileSystem& fs, const std::string& root, const std::string& subdir) {
  std::vector<std::string> other;
  const auto regular = format::regular_files_under(fs, root, subdir, &other);
  TORCH_CHECK(other.empty(), "checkpoint directory '", root, "' holds '", other.front(),
              "', which is not a regular file; remove it");
  std::vector<FileEntry> files;
  for (const auto& path : regular) {
    FileEntry entry;
    entry.path = path;
    entry.crc32 = file_crc32(fs, root + "/" + path, &entry.bytes);
    files.push_back(entry);
  }
  return files;
}

std::string file_manifest_json(const std::vector<FileEntry>& files) {
  nlohmann::json out = nlohmann::json::object();
  for (const auto& f : files) out[f.path] = {{"bytes", f.bytes}, {"crc32", hex32(f.crc32)}};
  return out.dump();
}

std::vector<FileEntry> parse_file_manifest(const std::string& text, const std::string& source) {
  const auto damaged = [&source](const std::string& why) {
    TORCH_CHECK(false, "'", source, "': metadata '", kFilesKey, "' ", why,
                "; the checkpoint is damaged, remove it to resume from the one before");
  };
  nlohmann::json json;
  try {
    json = util::parse_json_text(text);
  } catch (const util::JsonTextError& e) {
    damaged(std::string("is ") + e.what());
  }
  if (!json.is_object()) damaged("is not a JSON object of files");
  std::vector<FileEntry> files;
  for (const auto& [path, value] : json.items()) {
    const stdfs::path p(path);
    if (path.empty() || p.is_absolute() ||
        std::any_of(p.begin(), p.end(), [](const stdfs::path& part) { return part == ".." || part == "."; })) {
      damaged("names " + util::shown(path) + ", which is not a path inside the checkpoint directory");
    }
    FileEntry entry;
    entry.path = path;
    try {
      if (!value.is_object()) throw util::JsonTextError("it is " + util::json_kind(value) + ", not an object");
      const int64_t bytes = util::json_integer(util::json_member(value, "bytes", "'bytes'"), "'bytes'");
      if (bytes < 0) throw util::JsonTextError("its 'bytes' is negative");
      entry.bytes = static_cast<uint64_t>(bytes);
      const std::string crc = util::json_string(util::json_member(value, "crc32", "'crc32'"), "'crc32'");
      if (crc.size() != 8 || crc.find_first_not_of("0123456789abcdef") != std::string::npos) {
        throw util::JsonTextError("its 'crc32' is " + util::shown(crc) + ", not 8 hex digits");
      }
      entry.crc32 = static_cast<uint32_t>(std::stoul(crc, nullptr, 16));
    } catch (const util::JsonTextError& e) {
      damaged("entry " + util::shown(path) + ": " + e.what());
    }
    files.push_back(entry);
  }
  return files;
}

std::vector<std::string> check_files(format::FileSystem& fs, const std::string& root, const std::string& subdir,
                                     const std::vector<FileEntry>& files, bool checksums) {
  std::vector<std::string> other_list;
  const auto regular_list = format::regular_files_under(fs, root, subdir, &other_list);
  std::set<std::string> regular(regular_list.begin(), regular_list.end()), other(other_list.begin(), other_list.end());
  std::vector<std::string> problems;
  for (const auto& path : other) problems.push_back("'" + path + "' is not a regular file");
  for (const auto& f : files) {
    const std::string path = root + "/" + f.path;
    if (!regular.count(f.path)) {
      if (!other.count(f.path)) problems.push_back("'" + f.path + "' is missing");
      continue;
    }
    regular.erase(f.path);
    const uint64_t size = fs.status(path).size;
    if (size != f.bytes) {
      problems.push_back("'" + f.path + "' holds " + std::to_string(size) + " bytes, the manifest " +
                         std::to_string(f.bytes));
      continue;
    }
    if (!checksums) continue;
    try {
      uint64_t bytes = 0;
      const uint32_t crc = file_crc32(fs, path, &bytes);
      if (crc != f.crc32) {
        problems.push_back("'" + f.path + "' has CRC-32 " + hex32(crc) + ", the manifest " + hex32(f.crc32));
      }
    } catch (const c10::Error& e) {
      problems.push_back(e.what_without_backtrace());
    }
  }
  for (const auto& path : regular) problems.push_back("'" + path + "' is not in the manifest");
  return problems;
}

}  // namespace paisoar::checkpoint
