// remove_shm_leftovers (shm_leftovers.h).
#include "launch/shm_leftovers.h"

#include <dirent.h>
#include <sys/mman.h>
#include <unistd.h>

#include <string>

#include "comm/shm_names.h"

namespace paisoar::launch {

int remove_shm_leftovers(pid_t pid) {
  const std::string prefix = comm::shm_segment_prefix(::getuid(), pid);
  DIR* dir = ::opendir("/dev/shm");
  if (dir == nullptr) return 0;
  int removed = 0;
  while (const dirent* entry = ::readdir(dir)) {
    const std::string name = entry->d_name;
    if (name.rfind(prefix, 0) == 0 && ::shm_unlink(("/" + name).c_str()) == 0) ++removed;
  }
  ::closedir(dir);
  return removed;
}

}  // namespace paisoar::launch
