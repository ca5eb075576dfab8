// FileManifest: directory walk, whole-file CRC-32 (zlib's, as the safetensors
// files use) through util::InputFile (a FIFO is refused, never waited on),
// and the JSON form read through util::parse_json_text.
#include "paisoar/checkpoint/file_manifest.h"

#include <c10/util/Exception.h>
#include <nlohmann/json.hpp>
#include <zlib.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <map>
#include <set>

#include <unistd.h>

#include "src/util/input_file.h"
#include "src/util/json_text.h"
#include "src/util/text_check.h"

namespace paisoar::checkpoint {
namespace {

namespace fs = std::filesystem;

std::string hex32(uint32_t value) {
  char text[9];
  std::snprintf(text, sizeof text, "%08x", value);
  return text;
}

uint32_t file_crc32(const std::string& path, uint64_t* bytes) {
  util::InputFile in(path, "checkpoint file");
  uLong crc = ::crc32(0, nullptr, 0);
  std::vector<unsigned char> buffer(1 << 20);
  uint64_t total = 0;
  for (;;) {
    const ssize_t n = ::read(in.fd(), buffer.data(), buffer.size());
    if (n < 0 && errno == EINTR) continue;
    TORCH_CHECK(n >= 0, "cannot read checkpoint file '", path, "': ", std::strerror(errno));
    if (n == 0) break;
    crc = ::crc32(crc, buffer.data(), static_cast<uInt>(n));
    total += static_cast<uint64_t>(n);
  }
  *bytes = total;
  return static_cast<uint32_t>(crc);
}

// The regular files under <root>/<subdir> (relative paths), and the paths
// that are there but are not regular files (a dangling link, a FIFO).
void walk(const std::string& root, const std::string& subdir, std::set<std::string>& regular,
          std::set<std::string>& other) {
  std::error_code ec;
  const fs::path base = fs::path(root) / subdir;
  if (!fs::is_directory(base, ec)) return;
  for (auto it = fs::recursive_directory_iterator(base, ec); !ec && it != fs::recursive_directory_iterator();
       it.increment(ec)) {
    const std::string relative = fs::path(it->path()).lexically_relative(root).generic_string();
    if (it->is_directory(ec)) continue;
    (it->is_regular_file(ec) ? regular : other).insert(relative);
  }
}

}  // namespace

std::vector<FileEntry> describe_files(const std::string& root, const std::string& subdir) {
  std::set<std::string> regular, other;
  walk(root, subdir, regular, other);
  TORCH_CHECK(other.empty(), "checkpoint directory '", root, "' holds '", *other.begin(),
              "', which is not a regular file; remove it");
  std::vector<FileEntry> files;
  for (const auto& path : regular) {
    FileEntry entry;
    entry.path = path;
    entry.crc32 = file_crc32(root + "/" + path, &entry.bytes);
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
    const fs::path p(path);
    if (path.empty() || p.is_absolute() ||
        std::any_of(p.begin(), p.end(), [](const fs::path& part) { return part == ".." || part == "."; })) {
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

std::vector<std::string> check_files(const std::string& root, const std::string& subdir,
                                     const std::vector<FileEntry>& files, bool checksums) {
  std::set<std::string> regular, other;
  walk(root, subdir, regular, other);
  std::vector<std::string> problems;
  for (const auto& path : other) problems.push_back("'" + path + "' is not a regular file");
  for (const auto& f : files) {
    const std::string path = root + "/" + f.path;
    if (!regular.count(f.path)) {
      if (!other.count(f.path)) problems.push_back("'" + f.path + "' is missing");
      continue;
    }
    regular.erase(f.path);
    std::error_code ec;
    const uint64_t size = fs::file_size(path, ec);
    if (ec || size != f.bytes) {
      problems.push_back("'" + f.path + "' holds " + (ec ? "?" : std::to_string(size)) + " bytes, the manifest " +
                         std::to_string(f.bytes));
      continue;
    }
    if (!checksums) continue;
    try {
      uint64_t bytes = 0;
      const uint32_t crc = file_crc32(path, &bytes);
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
