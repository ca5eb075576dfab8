// Picks a free TCP port for --master_port 0 by binding port 0 and reading
// back what the kernel chose. The port is released before returning, so
// another process could take it first; torchrun has the same race.
#pragma once

#include <string>

namespace paisoar::launch {

// Returns a port in 1..65535 that was free on `host` (an address or a name).
// Throws std::runtime_error saying why when no socket could be bound there.
int pick_free_port(const std::string& host);

}  // namespace paisoar::launch
