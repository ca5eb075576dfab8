// What every libFuzzer target checks: the reader returns, or throws its own
// error type with a message that names the input (the file, or `--set`).
// Anything else (another exception type, an error that names nothing) is a
// finding: finding() prints it and aborts, so libFuzzer saves the input.
// Crashes, sanitizer reports, hangs and memory blow-ups libFuzzer sees itself.
#pragma once

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <initializer_list>
#include <string>
#include <typeinfo>

#include <c10/util/Type.h>

#include "paisoar/error.h"
#include "tests/support/file_bytes.h"
#include "tests/support/temp_dir.h"

namespace paisoar::fuzz {

[[noreturn]] inline void finding(const std::string& what) {
  std::fprintf(stderr, "\npaisoar fuzz finding: %s\n", what.c_str());
  std::abort();
}

// A directory for the target's files, removed at exit (in /dev/shm when it can be).
inline const testing::TempDir& scratch() {
  static const testing::TempDir dir("fuzz", testing::fast_temp_parent());
  return dir;
}

inline std::string bytes_of(const uint8_t* data, size_t size) {
  return std::string(reinterpret_cast<const char*>(data), size);
}

// Runs read(): true if it returned, false if it threw Error naming one of
// `named` (any message when `named` is empty); a finding otherwise.
template <class Error, class Read>
bool reads_or_refuses(Read&& read, std::initializer_list<std::string> named) {
  try {
    read();
    return true;
  } catch (const Error& e) {
    const std::string text = error_text(e);
    bool names = named.size() == 0;
    std::string wanted;
    for (const auto& n : named) {
      names = names || text.find(n) != std::string::npos;
      wanted += (wanted.empty() ? "" : " or ") + n;
    }
    if (!names) finding("the error does not name " + wanted + ": " + text);
    if (text.empty()) finding("an empty error message");
    return false;
  } catch (const std::exception& e) {
    finding("unexpected exception " + c10::demangle(typeid(e).name()) + ": " + error_text(e));
  }
}

}  // namespace paisoar::fuzz
