// Picks free TCP ports for --master_port 0 by binding port 0 and reading
// back what the kernel chose. The port is released before returning, so
// another process could take it first; torchrun has the same race.
#pragma once

#include <string>

namespace paisoar::launch {

// Returns a port in 1..65535 that was free on `host` (an address or a name).
// Throws std::runtime_error saying why when no socket could be bound there.
int pick_free_port(const std::string& host);

// True when a listening socket could be bound to `host`:`port` just now.
bool port_is_free(const std::string& host, int port);

// Returns a port P such that P and P + 1 were both free on `host`: the
// launcher's store and rank 0's own store (see docs/LAUNCH.md). Throws like
// pick_free_port, or when no such pair turns up after a few tries.
int pick_free_port_pair(const std::string& host);

}  // namespace paisoar::launch
