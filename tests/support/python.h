// Test support: the Python the tests compare against (the project's venv with
// torch, torchvision and safetensors, configured as PAISOAR_PYTHON; the
// environment variable of that name overrides it) and a runner for it. A test
// whose Python peer is missing or fails must fail, never skip: run_python
// throws with the command and what Python printed to stderr.
#pragma once

#include <array>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <memory>
#include <stdexcept>
#include <string>

#include <unistd.h>

namespace paisoar::testing {

inline std::string test_python() {
  const char* env = std::getenv("PAISOAR_PYTHON");
  if (env != nullptr && *env != '\0') return env;
#ifdef PAISOAR_TEST_PYTHON
  return PAISOAR_TEST_PYTHON;
#else
  return "python3";
#endif
}

// Runs `<python> <args>` through the shell; returns its stdout. Throws
// std::runtime_error naming the command, its exit status and its stderr when
// it does not exit with 0.
inline std::string run_python(const std::string& args) {
  char err_path[] = "/tmp/paisoar_python_stderr_XXXXXX";
  const int fd = ::mkstemp(err_path);
  if (fd < 0) throw std::runtime_error("run_python: mkstemp failed");
  ::close(fd);
  const std::string command = test_python() + " " + args + " 2>" + err_path;
  std::string out;
  int status = -1;
  if (FILE* pipe = ::popen(command.c_str(), "r")) {
    std::array<char, 4096> buf;
    while (size_t n = std::fread(buf.data(), 1, buf.size(), pipe)) out.append(buf.data(), n);
    status = ::pclose(pipe);
  }
  std::ifstream err_file(err_path);
  const std::string err((std::istreambuf_iterator<char>(err_file)), std::istreambuf_iterator<char>());
  ::unlink(err_path);
  if (status != 0) {
    throw std::runtime_error("the Python peer failed (status " + std::to_string(status) + "): " +
                             command + "\n" + err +
                             "\n(run scripts/setup.sh for the venv, or set PAISOAR_PYTHON)");
  }
  return out;
}

}  // namespace paisoar::testing
