// The local address that the route to the master uses: what Gloo should bind
// to so that the other nodes can reach this one.
#pragma once

#include <string>

namespace paisoar::comm::detail {

// Resolves `master_addr` and asks the kernel which local address a connection
// to it would use (a UDP connect sends nothing). Loopback masters give 127.0.0.1.
// Throws c10::Error naming the address when it cannot be resolved.
std::string local_address_towards(const std::string& master_addr, int master_port);

}  // namespace paisoar::comm::detail
