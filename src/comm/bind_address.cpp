// local_address_towards: pick the interface address facing the master.
#include "src/comm/bind_address.h"

#include <c10/util/Exception.h>

#include <arpa/inet.h>
#include <netdb.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstring>
#include <stdexcept>

namespace paisoar::comm::detail {

std::string local_address_towards(const std::string& master_addr, int master_port) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_DGRAM;
  addrinfo* found = nullptr;
  std::string port = std::to_string(master_port);
  int rc = getaddrinfo(master_addr.c_str(), port.c_str(), &hints, &found);
  if (rc != 0 || !found) {
    C10_THROW_ERROR(Error, "cannot resolve MASTER_ADDR '" + master_addr +
                             "': " + gai_strerror(rc) + "; give an IP address or a host name "
                             "that resolves on every node");
  }
  std::string result;
  for (addrinfo* ai = found; ai && result.empty(); ai = ai->ai_next) {
    int fd = socket(ai->ai_family, ai->ai_socktype, 0);
    if (fd < 0) continue;
    sockaddr_storage local{};
    socklen_t len = sizeof(local);
    if (connect(fd, ai->ai_addr, ai->ai_addrlen) == 0 &&
        getsockname(fd, reinterpret_cast<sockaddr*>(&local), &len) == 0) {
      char text[INET6_ADDRSTRLEN] = {};
      const void* raw = local.ss_family == AF_INET
                            ? static_cast<const void*>(&reinterpret_cast<sockaddr_in*>(&local)->sin_addr)
                            : static_cast<const void*>(&reinterpret_cast<sockaddr_in6*>(&local)->sin6_addr);
      if (inet_ntop(local.ss_family, raw, text, sizeof(text))) result = text;
    }
    close(fd);
  }
  freeaddrinfo(found);
  if (result.empty()) {
    C10_THROW_ERROR(Error, "no local network route to MASTER_ADDR '" + master_addr +
                             "'; set GLOO_SOCKET_IFNAME to the interface to use");
  }
  return result;
}

}  // namespace paisoar::comm::detail
