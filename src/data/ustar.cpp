// ustar member headers (POSIX.1-1988 layout): the fields are NUL-terminated
// octal text at fixed offsets; the checksum is the byte sum of the header with
// the checksum field read as eight spaces.
#include "src/data/ustar.h"

#include <cassert>
#include <cstring>

namespace paisoar::data::ustar {
namespace {

// `digits` zero-padded octal digits then a NUL, as tar writes numeric fields.
// REQUIRES: value < 8^digits.
void put_octal(char* field, int digits, uint64_t value) {
  for (int i = digits - 1; i >= 0; --i, value >>= 3) field[i] = static_cast<char>('0' + (value & 7));
  field[digits] = '\0';
}

}  // namespace

std::array<char, kBlock> member_header(const std::string& name, uint64_t size) {
  assert(name.size() < 100 && size <= kMaxMemberSize);
  std::array<char, kBlock> h{};
  std::memcpy(h.data(), name.data(), name.size());  // name[100] at 0
  put_octal(h.data() + 100, 7, 0644);               // mode
  put_octal(h.data() + 108, 7, 0);                  // uid
  put_octal(h.data() + 116, 7, 0);                  // gid
  put_octal(h.data() + 124, 11, size);              // size
  put_octal(h.data() + 136, 11, 0);                 // mtime: fixed, for reproducible output
  h[156] = '0';                                     // typeflag: regular file
  std::memcpy(h.data() + 257, "ustar", 6);          // magic, NUL-terminated
  std::memcpy(h.data() + 263, "00", 2);             // version
  std::memset(h.data() + 148, ' ', 8);              // checksum counted as spaces
  unsigned sum = 0;
  for (char c : h) sum += static_cast<unsigned char>(c);
  put_octal(h.data() + 148, 6, sum);  // six digits, NUL, space
  h[155] = ' ';
  return h;
}

}  // namespace paisoar::data::ustar
