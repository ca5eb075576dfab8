// Test support: expect_error runs a call that must throw a c10::Error (what
// TORCH_CHECK raises) whose message names every one of the given parts;
// expect_error_of<E> does the same for any other exception type E.
#pragma once

#include <c10/util/Exception.h>
#include <gtest/gtest.h>

#include <functional>
#include <initializer_list>
#include <string>

namespace paisoar::testing {

inline void expect_error(const std::function<void()>& fn, std::initializer_list<const char*> parts) {
  try {
    fn();
    ADD_FAILURE() << "no error thrown; expected one mentioning " << *parts.begin();
  } catch (const c10::Error& e) {
    const std::string message = e.what_without_backtrace();
    for (const char* part : parts) EXPECT_NE(message.find(part), std::string::npos) << message;
  }
}

template <class E>
void expect_error_of(const std::function<void()>& fn, std::initializer_list<const char*> parts) {
  try {
    fn();
    ADD_FAILURE() << "no error thrown; expected one mentioning " << *parts.begin();
  } catch (const E& e) {
    const std::string message = e.what();
    for (const char* part : parts) EXPECT_NE(message.find(part), std::string::npos) << message;
  }
}

}  // namespace paisoar::testing
