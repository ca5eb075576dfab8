// Calling into a C library (libjpeg, libpng) whose error handler longjmps:
// run_guarded() is the one place that calls setjmp, so the rule that makes
// longjmp safe in C++ is kept in one spot.
#pragma once

#include <csetjmp>

namespace paisoar::data {

// Calls fn() and returns true, or returns false if the library's error handler
// longjmp'd to `jump` while fn ran. REQUIRES: fn and everything it calls hold
// no object with a non-trivial destructor across the library calls (longjmp
// skips destructors), and the caller reads nothing fn wrote after a false
// return except through memory (pointers, references). The library's handler
// must store its message somewhere the caller can read before it jumps.
template <class Fn>
[[gnu::noinline]] bool run_guarded(std::jmp_buf& jump, Fn& fn) {
  if (setjmp(jump) != 0) return false;
  fn();
  return true;
}

}  // namespace paisoar::data
