// Whether the ranks of a group can share memory: the same host (hostname and
// boot id), the same /dev/shm (not another container's), the same user and
// the same pid namespace (the backend watches its peers by pid).
// Backend::Auto chooses Backend::Shm for a group where all ranks can.
#pragma once

#include <string>

#include "paisoar/comm/store.h"

namespace paisoar::comm::detail {

// This process's "host|boot id|/dev/shm device:inode|uid|pid namespace".
std::string shared_memory_identity();

// Collective over the group's store: every rank posts its identity and reads
// the others'; the same answer on every rank.
bool ranks_share_memory(const Store& store, int rank, int size);

}  // namespace paisoar::comm::detail
