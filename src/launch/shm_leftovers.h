// Removing the /dev/shm segments a rank's process left behind. A segment is
// unlinked by the backend once every rank has mapped it, so only a rank
// killed between creating one and that moment leaves one; the launcher calls
// this for every rank it reaps, before a restart and at the end.
#pragma once

#include <sys/types.h>

namespace paisoar::launch {

// Unlinks this user's segments created by process `pid`; returns how many.
int remove_shm_leftovers(pid_t pid);

}  // namespace paisoar::launch
