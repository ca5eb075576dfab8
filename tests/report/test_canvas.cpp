// Canvas and its bitmap font: exact pixels for rectangles, polygons and text
// (checked against the font's own rows), line coverage against the distance
// formula's consequences, blending, clipping and the size checks.
#include <gtest/gtest.h>

#include <c10/util/Exception.h>

#include <algorithm>
#include <climits>
#include <cmath>
#include <set>
#include <string>

#include "src/report/bitmap_font.h"
#include "src/report/canvas.h"

using paisoar::report::Canvas;
using paisoar::report::glyph;
using paisoar::report::glyph_ink;
using paisoar::report::Point;
using paisoar::report::Rgb;
using paisoar::report::TextAnchor;
namespace report = paisoar::report;

namespace {

const Rgb kWhite{255, 255, 255};
const Rgb kBlack{0, 0, 0};
const Rgb kRed{200, 30, 40};

bool same(Rgb a, Rgb b) { return a.r == b.r && a.g == b.g && a.b == b.b; }

// The pixels that differ from `background`, as a bounding box.
struct Box {
  int left = INT_MAX, top = INT_MAX, right = INT_MIN, bottom = INT_MIN;  // inclusive
  int width() const { return right - left + 1; }
  int height() const { return bottom - top + 1; }
};
Box drawn_box(const Canvas& canvas, Rgb background) {
  Box box;
  for (int y = 0; y < canvas.height(); ++y) {
    for (int x = 0; x < canvas.width(); ++x) {
      if (same(canvas.at(x, y), background)) continue;
      box.left = std::min(box.left, x);
      box.right = std::max(box.right, x);
      box.top = std::min(box.top, y);
      box.bottom = std::max(box.bottom, y);
    }
  }
  return box;
}

bool images_equal(const Canvas& a, const Canvas& b) { return a.image().pixels == b.image().pixels; }

}  // namespace

TEST(BitmapFont, EveryPrintableGlyphButSpaceHasInk) {
  for (int c = 33; c <= 126; ++c) {
    const report::Glyph& g = glyph(static_cast<char>(c));
    EXPECT_TRUE(std::any_of(g.begin(), g.end(), [](uint8_t row) { return row != 0; })) << "char " << char(c);
  }
  const report::Glyph& space = glyph(' ');
  EXPECT_TRUE(std::all_of(space.begin(), space.end(), [](uint8_t row) { return row == 0; }));
}

TEST(BitmapFont, LettersAndDigitsAreDistinct) {
  std::string chars;
  for (char c = '0'; c <= '9'; ++c) chars += c;
  for (char c = 'A'; c <= 'Z'; ++c) chars += c;
  for (char c = 'a'; c <= 'z'; ++c) chars += c;
  for (size_t i = 0; i < chars.size(); ++i) {
    for (size_t j = i + 1; j < chars.size(); ++j) {
      EXPECT_NE(glyph(chars[i]), glyph(chars[j])) << chars[i] << " and " << chars[j] << " look the same";
    }
  }
}

TEST(BitmapFont, GlyphsStayInFiveColumnsAndOutsideAsciiIsQuestionMark) {
  for (int c = 32; c <= 126; ++c) {
    for (uint8_t row : glyph(static_cast<char>(c))) EXPECT_LT(row, 1 << report::kGlyphWidth) << char(c);
  }
  EXPECT_EQ(glyph('\x7f'), glyph('?'));
  EXPECT_EQ(glyph('\n'), glyph('?'));
  EXPECT_EQ(glyph(static_cast<char>(0xC3)), glyph('?'));
  // 'I' as drawn in the sheet: .###. / ..#.. x5 / .###.
  EXPECT_EQ(glyph('I'), (report::Glyph{0b01110, 0b00100, 0b00100, 0b00100, 0b00100, 0b00100, 0b01110, 0}));
}

TEST(BitmapFont, OnlyTailsUseTheDescenderRow) {
  const std::string tails = "gjpqy,;";
  for (int c = 32; c <= 126; ++c) {
    const bool descends = glyph(static_cast<char>(c))[report::kGlyphRows - 1] != 0;
    EXPECT_EQ(descends, tails.find(static_cast<char>(c)) != std::string::npos) << char(c);
  }
}

TEST(Canvas, FillsWithBackgroundAndHasTheImageSize) {
  Canvas canvas(7, 5, kRed);
  EXPECT_EQ(canvas.width(), 7);
  EXPECT_EQ(canvas.height(), 5);
  EXPECT_EQ(canvas.image().width, 7);
  EXPECT_EQ(canvas.image().height, 5);
  EXPECT_EQ(canvas.image().channels, 3);
  ASSERT_EQ(canvas.image().pixels.size(), 7u * 5u * 3u);
  for (int y = 0; y < 5; ++y) {
    for (int x = 0; x < 7; ++x) EXPECT_TRUE(same(canvas.at(x, y), kRed)) << x << "," << y;
  }
  EXPECT_EQ(canvas.image().at(4, 6, 1), kRed.g);
}

TEST(Canvas, RejectsBadSizesNamingTheValue) {
  try {
    Canvas canvas(0, 10, kWhite);
    FAIL() << "a zero width was accepted";
  } catch (const c10::ValueError& e) {
    const std::string message = e.what();
    EXPECT_NE(message.find("width 0"), std::string::npos) << message;
  }
  try {
    Canvas canvas(10, 16385, kWhite);
    FAIL() << "a height over 16384 was accepted";
  } catch (const c10::ValueError& e) {
    EXPECT_NE(std::string(e.what()).find("height 16385"), std::string::npos) << e.what();
  }
  EXPECT_THROW(Canvas(-3, 10, kWhite), c10::ValueError);
  EXPECT_NO_THROW(Canvas(1, 1, kWhite));
}

TEST(Canvas, FillRectSetsExactlyItsPixels) {
  Canvas canvas(20, 20, kWhite);
  canvas.fill_rect(2, 3, 4, 5, kRed);  // columns 2..5, rows 3..7
  for (int y = 0; y < 20; ++y) {
    for (int x = 0; x < 20; ++x) {
      const bool inside = x >= 2 && x <= 5 && y >= 3 && y <= 7;
      EXPECT_TRUE(same(canvas.at(x, y), inside ? kRed : kWhite)) << x << "," << y;
    }
  }
  Canvas unchanged(20, 20, kWhite);
  canvas.fill_rect(1, 1, 0, 5, kBlack);
  canvas.fill_rect(1, 1, 5, -2, kBlack);
  unchanged.fill_rect(2, 3, 4, 5, kRed);
  EXPECT_TRUE(images_equal(canvas, unchanged));
}

TEST(Canvas, FillRectClipsAtEveryEdge) {
  Canvas canvas(10, 8, kWhite);
  canvas.fill_rect(-5, -5, 8, 7, kRed);    // visible part: columns 0..2, rows 0..1
  canvas.fill_rect(7, 6, 100, 100, kBlack);  // visible part: columns 7..9, rows 6..7
  canvas.fill_rect(-1e300, 30, 1e301, 2, kBlack);  // wholly below the canvas
  for (int y = 0; y < 8; ++y) {
    for (int x = 0; x < 10; ++x) {
      Rgb expected = kWhite;
      if (x <= 2 && y <= 1) expected = kRed;
      if (x >= 7 && y >= 6) expected = kBlack;
      EXPECT_TRUE(same(canvas.at(x, y), expected)) << x << "," << y;
    }
  }
}

TEST(Canvas, HorizontalLineCoversItsRowsFully) {
  Canvas canvas(30, 21, kWhite);
  canvas.polyline({{5, 10.5}, {25, 10.5}}, kBlack, 3);  // rows 9..11 have centres within 1 of y = 10.5
  for (int x = 5; x < 25; ++x) {
    for (int y = 9; y <= 11; ++y) EXPECT_TRUE(same(canvas.at(x, y), kBlack)) << x << "," << y;
    for (int y : {8, 12}) EXPECT_TRUE(same(canvas.at(x, y), kWhite)) << x << "," << y;  // distance 2 >= 1.5 + 0.5
    for (int y = 0; y < 21; ++y) {
      if (std::abs(y - 10) >= 3) EXPECT_TRUE(same(canvas.at(x, y), kWhite)) << x << "," << y;
    }
  }
  // The round end: centre (3.5, 10.5) is 1.5 from the end point, coverage 0.5.
  EXPECT_EQ(canvas.at(3, 10).r, 128);
  EXPECT_TRUE(same(canvas.at(1, 10), kWhite));
}

TEST(Canvas, DiagonalLineIsSymmetricAboutItself) {
  Canvas canvas(32, 32, kWhite);
  canvas.polyline({{4, 4}, {28, 28}}, kBlack, 2);
  int partly = 0;
  for (int y = 0; y < 32; ++y) {
    for (int x = 0; x < 32; ++x) {
      ASSERT_TRUE(same(canvas.at(x, y), canvas.at(y, x))) << x << "," << y;
      const int r = canvas.at(x, y).r;
      if (r > 0 && r < 255) ++partly;
    }
  }
  for (int i = 5; i < 27; ++i) EXPECT_TRUE(same(canvas.at(i, i), kBlack)) << i;  // on the line
  EXPECT_GT(partly, 0);  // the edges are anti-aliased, not stepped
  // Centre (12.5, 9.5) is 3/sqrt(2) = 2.12 from the line: beyond 1 + 0.5.
  EXPECT_TRUE(same(canvas.at(12, 9), kWhite));
}

TEST(Canvas, PolylineJointsBlendOnceAndNonFinitePointsBreakTheLine) {
  const Rgb gray{100, 100, 100};
  Canvas bent(40, 40, kWhite);
  // Two segments meeting at (20.5, 20.5): the joint pixel is covered by both.
  bent.polyline({{5.5, 20.5}, {20.5, 20.5}, {20.5, 5.5}}, gray, 1);
  EXPECT_TRUE(same(bent.at(20, 20), gray));  // blended twice it would be darker

  Canvas broken(40, 40, kWhite);
  broken.polyline({{2.5, 10.5}, {12.5, 10.5}, {NAN, 0}, {20.5, 10.5}, {30.5, 10.5}}, kBlack, 1);
  EXPECT_TRUE(same(broken.at(8, 10), kBlack));
  EXPECT_TRUE(same(broken.at(16, 10), kWhite));  // the gap where the NaN point is
  EXPECT_TRUE(same(broken.at(25, 10), kBlack));

  Canvas nothing(10, 10, kWhite), blank(10, 10, kWhite);
  nothing.polyline({{5, 5}}, kBlack);
  nothing.polyline({}, kBlack);
  nothing.polyline({{1, 1}, {INFINITY, 2}, {4, NAN}}, kBlack);
  EXPECT_TRUE(images_equal(nothing, blank));
}

TEST(Canvas, FillPolygonSquareColoursExactlyItsInside) {
  Canvas canvas(20, 20, kWhite);
  canvas.fill_polygon({{4, 5}, {14, 5}, {14, 12}, {4, 12}}, kRed);  // columns 4..13, rows 5..11
  for (int y = 0; y < 20; ++y) {
    for (int x = 0; x < 20; ++x) {
      const bool inside = x >= 4 && x <= 13 && y >= 5 && y <= 11;
      EXPECT_TRUE(same(canvas.at(x, y), inside ? kRed : kWhite)) << x << "," << y;
    }
  }
}

TEST(Canvas, FillPolygonUsesNonZeroWindingAndSoftEdges) {
  // Two overlapping squares wound the same way: the overlap stays filled.
  Canvas canvas(30, 30, kWhite);
  canvas.fill_polygon({{2, 2}, {12, 2}, {12, 12}, {2, 12}, {2, 2}, {7, 7}, {17, 7}, {17, 17}, {7, 17}, {7, 7}},
                      kBlack);
  EXPECT_TRUE(same(canvas.at(9, 9), kBlack));   // overlap, winding 2
  EXPECT_TRUE(same(canvas.at(3, 3), kBlack));   // first square only
  EXPECT_TRUE(same(canvas.at(16, 16), kBlack));  // second square only
  EXPECT_TRUE(same(canvas.at(20, 20), kWhite));

  // A half-pixel edge covers half of its pixels, in x and in y.
  Canvas soft(10, 10, kWhite);
  soft.fill_polygon({{2, 2.5}, {6.5, 2.5}, {6.5, 6}, {2, 6}}, kBlack);
  EXPECT_TRUE(same(soft.at(3, 4), kBlack));
  EXPECT_EQ(soft.at(6, 4).r, 128);  // half of column 6
  EXPECT_EQ(soft.at(3, 2).r, 128);  // half of row 2
  EXPECT_EQ(soft.at(6, 2).r, 191);  // a quarter of the corner pixel: 255 * 0.75 = 191.25
}

TEST(Canvas, OpacityHalfGivesTheMidpointColour) {
  Canvas canvas(10, 10, kWhite);
  const Rgb blue{0, 40, 200};
  canvas.fill_polygon({{0, 0}, {10, 0}, {10, 10}, {0, 10}}, blue, 0.5);
  const Rgb mid = canvas.at(5, 5);
  EXPECT_NEAR(mid.r, (255 + 0) / 2.0, 1);
  EXPECT_NEAR(mid.g, (255 + 40) / 2.0, 1);
  EXPECT_NEAR(mid.b, (255 + 200) / 2.0, 1);
  Canvas none(10, 10, kWhite), blank(10, 10, kWhite);
  none.fill_polygon({{0, 0}, {10, 0}, {10, 10}}, blue, 0);
  EXPECT_TRUE(images_equal(none, blank));
}

TEST(Canvas, TextIDrawsExactlyTheGlyphPixels) {
  Canvas canvas(30, 40, kWhite);
  canvas.text({10, 20.5}, "I", kBlack, 1);  // the 7-row box is centred on y = 20.5: rows 17..23
  const report::Glyph& g = glyph('I');
  for (int y = 0; y < 40; ++y) {
    for (int x = 0; x < 30; ++x) {
      const int column = x - 10, row = y - 17;
      const bool ink = column >= 0 && column < 5 && row >= 0 && row < report::kGlyphRows && glyph_ink(g, column, row);
      EXPECT_TRUE(same(canvas.at(x, y), ink ? kBlack : kWhite)) << x << "," << y;
    }
  }
}

TEST(Canvas, DescendersHangBelowTheCentredBox) {
  Canvas canvas(30, 40, kWhite);
  canvas.text({10, 20.5}, "g", kBlack, 1);  // box rows 17..23 as for "I"; the tail on row 24
  const report::Glyph& g = glyph('g');
  for (int y = 0; y < 40; ++y) {
    for (int x = 0; x < 30; ++x) {
      const int column = x - 10, row = y - 17;
      const bool ink = column >= 0 && column < 5 && row >= 0 && row < report::kGlyphRows && glyph_ink(g, column, row);
      EXPECT_TRUE(same(canvas.at(x, y), ink ? kBlack : kWhite)) << x << "," << y;
    }
  }
  EXPECT_EQ(drawn_box(canvas, kWhite).bottom, 24);
}

TEST(Canvas, TextScaleDrawsEachFontPixelAsABlock) {
  Canvas canvas(40, 40, kWhite);
  canvas.text({3, 20}, "F", kRed, 3);  // 21 rows centred on y = 20: rows 9.5 -> 10..30
  const report::Glyph& g = glyph('F');
  for (int y = 0; y < 40; ++y) {
    for (int x = 0; x < 40; ++x) {
      const int column = (x - 3) / 3, row = (y - 10) / 3;
      const bool ink = x >= 3 && y >= 10 && column < 5 && row < report::kGlyphRows && glyph_ink(g, column, row);
      EXPECT_TRUE(same(canvas.at(x, y), ink ? kRed : kWhite)) << x << "," << y;
    }
  }
}

TEST(Canvas, TextWidthIsSixColumnsAGlyphLessTheLastGap) {
  EXPECT_EQ(Canvas::text_width("", 2), 0);
  EXPECT_EQ(Canvas::text_width("I", 1), 5);
  EXPECT_EQ(Canvas::text_width("I", 2), 10);
  EXPECT_EQ(Canvas::text_width("Loss", 1), 23);
  EXPECT_EQ(Canvas::text_width("Loss", 3), 69);
  EXPECT_EQ(Canvas::text_width("0.1234"), 70);  // default scale 2
  // The drawn width agrees: "MW" has ink in its first and last columns.
  Canvas canvas(40, 20, kWhite);
  canvas.text({4, 10}, "MW", kBlack, 2);
  EXPECT_EQ(drawn_box(canvas, kWhite).width(), Canvas::text_width("MW", 2));
}

TEST(Canvas, MiddleAndEndAnchorsShiftByHalfAndWholeWidth) {
  const std::string text = "AB";  // width 22 at scale 2
  const int width = Canvas::text_width(text, 2);
  ASSERT_EQ(width, 22);
  Canvas start(80, 20, kWhite), middle(80, 20, kWhite), end(80, 20, kWhite);
  start.text({10, 10}, text, kBlack, 2, TextAnchor::Start);
  middle.text({10 + width / 2.0, 10}, text, kBlack, 2, TextAnchor::Middle);
  end.text({10.0 + width, 10}, text, kBlack, 2, TextAnchor::End);
  EXPECT_TRUE(images_equal(start, middle));
  EXPECT_TRUE(images_equal(start, end));
  EXPECT_EQ(drawn_box(start, kWhite).left, 10);
}

TEST(Canvas, VerticalTextTurnsAnticlockwiseAndReadsUpwards) {
  Canvas canvas(40, 80, kWhite);
  canvas.text({20.5, 60}, "Hello", kBlack, 1, TextAnchor::Start, true);
  const Box box = drawn_box(canvas, kWhite);
  EXPECT_GT(box.height(), 3 * box.width());  // tall, not wide
  EXPECT_EQ(box.height(), Canvas::text_width("Hello", 1));
  EXPECT_EQ(box.bottom, 59);  // starts at y = 60 and runs up
  EXPECT_LE(box.right - box.left + 1, 7);

  // Font pixel (column, row) lands at x = 17 + row, y = 59 - column: the
  // glyph's top is on the left and its first column at the bottom.
  Canvas f(40, 80, kWhite);
  f.text({20.5, 60}, "F", kBlack, 1, TextAnchor::Start, true);
  const report::Glyph& g = glyph('F');
  for (int y = 0; y < 80; ++y) {
    for (int x = 0; x < 40; ++x) {
      const int row = x - 17, column = 59 - y;
      const bool ink = column >= 0 && column < 5 && row >= 0 && row < report::kGlyphRows && glyph_ink(g, column, row);
      EXPECT_TRUE(same(f.at(x, y), ink ? kBlack : kWhite)) << x << "," << y;
    }
  }

  // Anchors apply along the text: Middle centres it on y, End ends it there.
  Canvas middle(40, 80, kWhite), end(40, 80, kWhite);
  middle.text({20.5, 60 - 14.5}, "Hello", kBlack, 1, TextAnchor::Middle, true);
  end.text({20.5, 60 - 29.0}, "Hello", kBlack, 1, TextAnchor::End, true);
  EXPECT_TRUE(images_equal(middle, canvas));
  EXPECT_TRUE(images_equal(end, canvas));
}

TEST(Canvas, NonAsciiBytesDrawLikeQuestionMarks) {
  Canvas odd(40, 20, kWhite), question(40, 20, kWhite);
  odd.text({2, 10}, "a\xC3\xA9", kBlack, 1);  // "aé" in UTF-8: two bytes outside 32..126
  question.text({2, 10}, "a??", kBlack, 1);
  EXPECT_TRUE(images_equal(odd, question));
  EXPECT_FALSE(images_equal(odd, Canvas(40, 20, kWhite)));
}

TEST(Canvas, TextIsClippedAtTheEdges) {
  // Text running off the left, top and right shows exactly the part that the
  // same text drawn 10 pixels further in shows on a larger canvas.
  Canvas clipped(12, 6, kWhite), whole(32, 26, kWhite);
  clipped.text({-3, 1}, "WWWW", kBlack, 2);
  whole.text({7, 11}, "WWWW", kBlack, 2);
  for (int y = 0; y < 6; ++y) {
    for (int x = 0; x < 12; ++x) EXPECT_TRUE(same(clipped.at(x, y), whole.at(x + 10, y + 10))) << x << "," << y;
  }
  EXPECT_FALSE(images_equal(clipped, Canvas(12, 6, kWhite)));

  Canvas nothing(12, 6, kWhite);
  nothing.text({1e300, 3}, "x", kBlack, 2);
  nothing.text({NAN, 3}, "x", kBlack, 2);
  nothing.text({5, -1e300}, "x", kBlack, 2, TextAnchor::Start, true);
  nothing.text({5, 3}, "x", kBlack, 0);
  EXPECT_TRUE(images_equal(nothing, Canvas(12, 6, kWhite)));
}
