// The names of Backend::Shm's segments in /dev/shm, shared by the backend
// (which creates them) and the launcher (which removes a killed rank's).
// Free of LibTorch: the launcher does not link it.
#pragma once

#include <sys/types.h>

#include <string>

namespace paisoar::comm {

// Every segment a process creates is named /<this prefix><n>-<random>; the
// job token is not in it, since anyone can list /dev/shm.
inline std::string shm_segment_prefix(uid_t uid, pid_t pid) {
  return "paisoar-" + std::to_string(uid) + "-" + std::to_string(pid) + "-";
}

}  // namespace paisoar::comm
