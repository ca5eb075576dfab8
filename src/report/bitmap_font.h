// The built-in 5x7 bitmap font the Canvas draws text with: one fixed-width
// glyph per printable ASCII character (32..126), so a report's PNG needs no
// font files and renders the same on every machine.
#pragma once

#include <array>
#include <cstdint>

namespace paisoar::report {

inline constexpr int kGlyphWidth = 5;    // ink columns of every glyph
inline constexpr int kGlyphHeight = 7;   // rows from the top of a capital to the baseline: the text's box
inline constexpr int kGlyphRows = 8;     // kGlyphHeight and one descender row below the box
inline constexpr int kGlyphAdvance = 6;  // columns from one glyph's left edge to the next's

// Rows top to bottom; in each row bit (kGlyphWidth - 1 - column) is set where
// that column (0 = left) has ink.
//
// Capitals and digits fill rows 0..6 and lower case has its x-height on rows
// 2..6, all standing on row 6. Only the tails of g, j, p, q, y and of , ;
// reach row 7, one row below the 7-row box that text is laid out and centred by.
using Glyph = std::array<uint8_t, kGlyphRows>;

// The glyph of `c`; any char outside 32..126 gets the glyph of '?'.
// Thread-safe: the table is a compile-time constant.
const Glyph& glyph(char c);

// Whether `g` has ink at (column, row). REQUIRES: 0 <= column < kGlyphWidth,
// 0 <= row < kGlyphRows.
inline bool glyph_ink(const Glyph& g, int column, int row) {
  return (g[row] >> (kGlyphWidth - 1 - column)) & 1;
}

}  // namespace paisoar::report
