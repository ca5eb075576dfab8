// Printable UTF-8 by YAML 1.2's c-printable production: x09, x0A, x0D,
// x20-x7E, x85, xA0-xD7FF, xE000-xFFFD, x10000-x10FFFF.
#include "src/util/text_check.h"

#include <cstdint>
#include <cstdio>

namespace paisoar::util {
namespace {

// The code point of the UTF-8 sequence at text[i] and its length, or length 0
// when the bytes there are not well-formed UTF-8 (overlong, surrogate, cut).
struct Decoded {
  uint32_t code = 0;
  size_t length = 0;
};

Decoded decode_at(std::string_view text, size_t i) {
  const auto byte = [&](size_t k) { return static_cast<uint8_t>(text[k]); };
  const uint8_t lead = byte(i);
  if (lead < 0x80) return {lead, 1};
  size_t length = 0;
  uint32_t code = 0;
  uint32_t least = 0;
  if ((lead & 0xE0) == 0xC0) length = 2, code = lead & 0x1F, least = 0x80;
  else if ((lead & 0xF0) == 0xE0) length = 3, code = lead & 0x0F, least = 0x800;
  else if ((lead & 0xF8) == 0xF0) length = 4, code = lead & 0x07, least = 0x10000;
  else return {};
  if (i + length > text.size()) return {};
  for (size_t k = 1; k < length; ++k) {
    if ((byte(i + k) & 0xC0) != 0x80) return {};
    code = (code << 6) | (byte(i + k) & 0x3F);
  }
  if (code < least || code > 0x10FFFF || (code >= 0xD800 && code <= 0xDFFF)) return {};
  return {code, length};
}

bool printable(uint32_t c) {
  return c == 0x09 || c == 0x0A || c == 0x0D || (c >= 0x20 && c <= 0x7E) || c == 0x85 ||
         (c >= 0xA0 && c <= 0xD7FF) || (c >= 0xE000 && c <= 0xFFFD) || (c >= 0x10000 && c <= 0x10FFFF);
}

std::string hex_byte(uint8_t b) {
  char out[8];
  std::snprintf(out, sizeof out, "0x%02X", static_cast<unsigned>(b));
  return out;
}

}  // namespace

std::optional<TextFault> find_non_text(std::string_view text) {
  int line = 1;
  size_t line_start = 0;
  for (size_t i = 0; i < text.size();) {
    const Decoded d = decode_at(text, i);
    if (d.length == 0 || !printable(d.code)) {
      const auto b = static_cast<uint8_t>(text[i]);
      std::string what = "byte " + hex_byte(b);
      what += d.length == 0 ? " (not UTF-8 text)" : b == 0 ? " (a NUL byte)" : " (a control character)";
      return TextFault{line, static_cast<int>(i - line_start) + 1, what};
    }
    if (d.code == '\n') ++line, line_start = i + 1;
    i += d.length;
  }
  return std::nullopt;
}

std::string shown(std::string_view input) {
  std::string out = "'";
  for (size_t i = 0; i < input.size();) {
    const Decoded d = decode_at(input, i);
    if (d.length == 0 || !printable(d.code) || d.code == '\t' || d.code == '\n' || d.code == '\r') {
      out += "\\x" + hex_byte(static_cast<uint8_t>(input[i])).substr(2);
      ++i;
      continue;
    }
    if (d.code == '\'' || d.code == '\\') out += '\\';
    out.append(input.substr(i, d.length));
    i += d.length;
  }
  return out + "'";
}

}  // namespace paisoar::util
