// shared_memory_identity and ranks_share_memory (host_identity.h).
#include "src/comm/host_identity.h"

#include <sys/stat.h>
#include <unistd.h>

#include <fstream>

namespace paisoar::comm::detail {

std::string shared_memory_identity() {
  char host[256] = {};
  ::gethostname(host, sizeof(host) - 1);
  std::string boot_id;
  std::ifstream("/proc/sys/kernel/random/boot_id") >> boot_id;
  struct stat st {};
  const std::string shm = ::stat("/dev/shm", &st) == 0
                              ? std::to_string(st.st_dev) + ":" + std::to_string(st.st_ino)
                              : "none";
  // The pid namespace too: a peer's liveness is checked by its pid.
  const std::string pids = ::stat("/proc/self/ns/pid", &st) == 0 ? std::to_string(st.st_ino) : "?";
  return std::string(host) + "|" + boot_id + "|" + shm + "|" + std::to_string(::getuid()) + "|" + pids;
}

bool ranks_share_memory(const Store& store, int rank, int size) {
  const std::string mine = shared_memory_identity();
  store.set("shm/host/" + std::to_string(rank), mine);
  bool same = true;
  for (int r = 0; r < size; ++r) same = same && store.get("shm/host/" + std::to_string(r)) == mine;
  return same && mine.find("|none|") == std::string::npos;  // identical identities: the same verdict
}

}  // namespace paisoar::comm::detail
