// error_file_message(): just enough JSON to read a string under a key.
#include "launch/rank_error_file.h"

#include <fstream>

namespace paisoar::launch {
namespace {

void skip_blanks(const std::string& t, std::size_t& i) {
  while (i < t.size() && (t[i] == ' ' || t[i] == '\n' || t[i] == '\r' || t[i] == '\t')) ++i;
}

void put_utf8(std::string& out, unsigned cp) {
  if (cp < 0x80) {
    out.push_back(static_cast<char>(cp));
  } else if (cp < 0x800) {
    out.push_back(static_cast<char>(0xc0 | (cp >> 6)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3f)));
  } else if (cp < 0x10000) {
    out.push_back(static_cast<char>(0xe0 | (cp >> 12)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3f)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3f)));
  } else {
    out.push_back(static_cast<char>(0xf0 | (cp >> 18)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 12) & 0x3f)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3f)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3f)));
  }
}

bool hex4(const std::string& t, std::size_t at, unsigned* v) {
  if (at + 4 > t.size()) return false;
  *v = 0;
  for (std::size_t k = at; k < at + 4; ++k) {
    const char c = t[k];
    const unsigned d = c >= '0' && c <= '9' ? c - '0'
                       : c >= 'a' && c <= 'f' ? c - 'a' + 10
                       : c >= 'A' && c <= 'F' ? c - 'A' + 10
                                              : 16;
    if (d > 15) return false;
    *v = *v * 16 + d;
  }
  return true;
}

// The JSON string starting at t[i] == '"'; i moves past it.
std::optional<std::string> read_string(const std::string& t, std::size_t& i) {
  std::string out;
  for (++i; i < t.size(); ++i) {
    const char c = t[i];
    if (c == '"') {
      ++i;
      return out;
    }
    if (c != '\\') {
      out.push_back(c);
      continue;
    }
    if (++i >= t.size()) return std::nullopt;
    switch (t[i]) {
      case 'n': out.push_back('\n'); break;
      case 't': out.push_back('\t'); break;
      case 'r': out.push_back('\r'); break;
      case 'b': out.push_back('\b'); break;
      case 'f': out.push_back('\f'); break;
      case 'u': {
        unsigned cp = 0;
        if (!hex4(t, i + 1, &cp)) return std::nullopt;
        i += 4;
        unsigned low = 0;
        if (cp >= 0xd800 && cp < 0xdc00 && t.compare(i + 1, 2, "\\u") == 0 && hex4(t, i + 3, &low) &&
            low >= 0xdc00 && low < 0xe000) {
          cp = 0x10000 + ((cp - 0xd800) << 10) + (low - 0xdc00);
          i += 6;
        }
        put_utf8(out, cp);
        break;
      }
      default: out.push_back(t[i]); break;  // \" \\ \/
    }
  }
  return std::nullopt;
}

// The value of the first "message" key at or after `i`: a string, or the
// same rule applied inside an object.
std::optional<std::string> message_after(const std::string& t, std::size_t i, int depth) {
  static const std::string kKey = "\"message\"";
  for (std::size_t at = t.find(kKey, i); at != std::string::npos; at = t.find(kKey, at + 1)) {
    std::size_t j = at + kKey.size();
    skip_blanks(t, j);
    if (j >= t.size() || t[j] != ':') continue;  // "message" was a value, not a key
    ++j;
    skip_blanks(t, j);
    if (j < t.size() && t[j] == '"') return read_string(t, j);
    if (j < t.size() && t[j] == '{' && depth < 4) return message_after(t, j, depth + 1);
    return std::nullopt;
  }
  return std::nullopt;
}

}  // namespace

std::optional<std::string> error_file_message(const std::string& text) {
  return message_after(text, 0, 0);
}

std::optional<std::string> read_error_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return std::nullopt;
  std::string text;
  text.resize(1 << 20);
  in.read(text.data(), static_cast<std::streamsize>(text.size()));
  text.resize(static_cast<std::size_t>(in.gcount()));
  return error_file_message(text);
}

}  // namespace paisoar::launch
