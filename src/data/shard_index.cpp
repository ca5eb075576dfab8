// Record keys and the shard index text: formatting, and a strict parser whose
// errors name the file and line, since a bad index means a bad conversion.
#include "src/data/shard_index.h"
#include "paisoar/error.h"

#include <cerrno>
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <sstream>
#include <unordered_map>

#include "paisoar/data/data_error.h"
#include "src/util/text_check.h"

namespace paisoar::data {
namespace {

constexpr const char* kMagic = "# paisoar-shard-index v1 records=";

bool is_key_char(char c) {
  return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_' ||
         c == '-';
}

[[noreturn]] void fail(const std::string& path, size_t line, const std::string& what) {
  throw DataError("shard index '" + path + "' line " + std::to_string(line) + ": " + what +
                  "; the index is damaged: re-run paisoar convert");
}

// A whole field as an unsigned number in `base`; false if empty or not all digits.
bool parse_unsigned(const std::string& s, int base, uint64_t* out) {
  if (s.empty() || s.size() > 20) return false;
  char* end = nullptr;
  errno = 0;
  const unsigned long long v = std::strtoull(s.c_str(), &end, base);
  if (errno != 0 || *end != '\0' || s[0] == '-' || s[0] == '+' || s[0] == ' ') return false;
  *out = v;
  return true;
}

std::vector<std::string> split_tabs(const std::string& line) {
  std::vector<std::string> fields;
  size_t begin = 0;
  for (;;) {
    const size_t tab = line.find('\t', begin);
    fields.push_back(line.substr(begin, tab - begin));
    if (tab == std::string::npos) return fields;
    begin = tab + 1;
  }
}

}  // namespace

void check_record_key(const std::string& key) {
  bool ok = !key.empty() && key.size() <= kMaxRecordKey;
  for (char c : key) ok = ok && is_key_char(c);
  if (!ok) {
    throw DataError("record key " + util::shown(key) + " is not valid: use 1 to " + std::to_string(kMaxRecordKey) +
                    " characters of A-Z, a-z, 0-9, '_' and '-' (no '/' or '.')");
  }
}

void check_record_ext(const std::string& ext) {
  bool ok = !ext.empty() && ext.size() <= kMaxRecordExt;
  for (char c : ext) ok = ok && ((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9'));
  if (!ok) {
    throw DataError("record extension " + util::shown(ext) + " is not valid: use 1 to " +
                    std::to_string(kMaxRecordExt) + " characters of a-z and 0-9, e.g. jpg, png, pgm");
  }
}

std::string format_index(const std::vector<ShardIndexEntry>& entries) {
  std::string out = kMagic + std::to_string(entries.size()) + "\n";
  char crc[9];
  for (const ShardIndexEntry& e : entries) {
    std::snprintf(crc, sizeof(crc), "%08" PRIx32, e.crc32);
    out += e.key + '\t' + std::to_string(e.label) + '\t' + std::to_string(e.offset) + '\t' +
           std::to_string(e.size) + '\t' + crc + '\t' + e.ext + '\n';
  }
  return out;
}

std::vector<ShardIndexEntry> parse_index(const std::string& text, const std::string& idx_path) {
  std::istringstream in(text);
  std::string line;
  uint64_t expected = 0;
  if (!std::getline(in, line) || line.rfind(kMagic, 0) != 0 ||
      !parse_unsigned(line.substr(std::string(kMagic).size()), 10, &expected)) {
    fail(idx_path, 1, "expected '" + std::string(kMagic) + "N', not a paisoar shard index");
  }
  std::vector<ShardIndexEntry> entries;
  std::unordered_map<std::string, size_t> line_of_key;  // keys are unique in a shard
  size_t number = 1;
  while (std::getline(in, line)) {
    ++number;
    const auto f = split_tabs(line);
    if (f.size() != 6) fail(idx_path, number, "expected 6 tab-separated fields, found " + std::to_string(f.size()));
    ShardIndexEntry e;
    e.key = f[0];
    e.ext = f[5];
    try {
      check_record_key(e.key);
      check_record_ext(e.ext);
    } catch (const DataError& bad) {
      fail(idx_path, number, error_text(bad));
    }
    if (const auto [it, fresh] = line_of_key.emplace(e.key, number); !fresh) {
      fail(idx_path, number, "key " + util::shown(e.key) + " appears twice (also on line " + std::to_string(it->second) + ")");
    }
    uint64_t label = 0, crc = 0;
    const bool negative = !f[1].empty() && f[1][0] == '-';
    if (!parse_unsigned(negative ? f[1].substr(1) : f[1], 10, &label) || label > INT64_MAX) {
      fail(idx_path, number, "label " + util::shown(f[1]) + " is not an integer");
    }
    e.label = negative ? -static_cast<int64_t>(label) : static_cast<int64_t>(label);
    if (!parse_unsigned(f[2], 10, &e.offset)) fail(idx_path, number, "offset " + util::shown(f[2]) + " is not a number");
    if (!parse_unsigned(f[3], 10, &e.size)) fail(idx_path, number, "size " + util::shown(f[3]) + " is not a number");
    if (f[4].size() != 8 || !parse_unsigned(f[4], 16, &crc)) {
      fail(idx_path, number, "CRC-32 " + util::shown(f[4]) + " is not 8 hex digits");
    }
    e.crc32 = static_cast<uint32_t>(crc);
    entries.push_back(std::move(e));
  }
  if (entries.size() != expected) {
    fail(idx_path, number, "the header says " + std::to_string(expected) + " records but " +
                               std::to_string(entries.size()) + " follow");
  }
  return entries;
}

}  // namespace paisoar::data
