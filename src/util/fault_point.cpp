// fault_point: parse PAISOAR_TEST_FAULT on each call (tests set it after the
// process started) and raise SIGKILL, which nothing can catch or clean up after.
#include "src/util/fault_point.h"

#include <signal.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <string>

namespace paisoar::util {

void fault_point(const char* point, int64_t index) {
  const char* wanted = std::getenv("PAISOAR_TEST_FAULT");
  if (wanted == nullptr) return;
  const std::string spec = wanted;
  const size_t colon = spec.find(':');
  if (spec.compare(0, colon, point) != 0) return;
  if (colon != std::string::npos && spec.substr(colon + 1) != std::to_string(index)) return;
  const char* restart = std::getenv("PAISOAR_RESTART_COUNT");
  if (restart != nullptr && std::strcmp(restart, "0") != 0) return;
  const char* rank = std::getenv("PAISOAR_TEST_FAULT_RANK");
  const char* my_rank = std::getenv("RANK");
  if (rank != nullptr && (my_rank == nullptr || std::strcmp(rank, my_rank) != 0)) return;
  ::kill(::getpid(), SIGKILL);
  ::pause();  // SIGKILL is delivered before kill() returns; never reached
}

}  // namespace paisoar::util
