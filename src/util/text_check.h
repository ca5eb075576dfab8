// Text that users wrote, checked and shown: whether a file meant to be text
// (a YAML config) holds only printable UTF-8, and how to echo a piece of user
// input in a message so that it reaches the terminal as text whatever it holds.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace paisoar::util {

// Where a text first stops being printable UTF-8 (lines and columns from 1;
// columns count bytes) and what is there, e.g. "byte 0x01 (a control character)".
struct TextFault {
  int line = 0;
  int column = 0;
  std::string what;
};

// The first byte of `text` that is not printable UTF-8 as YAML defines it
// (tab, line feed, carriage return and the printable code points; a byte-order
// mark is allowed), or nothing when all of it is.
std::optional<TextFault> find_non_text(std::string_view text);

// `input` in single quotes, with every byte that would not print as text
// (control characters, broken UTF-8) written as \xNN and a quote as \'.
std::string shown(std::string_view input);

}  // namespace paisoar::util
