// pick_free_port(): bind port 0 on the master address, read the port back.
#include "launch/free_port.h"

#include <netdb.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <cerrno>
#include <cstring>
#include <stdexcept>

#include "launch/unique_fd.h"

namespace paisoar::launch {

int pick_free_port(const std::string& host) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* found = nullptr;
  if (int rc = getaddrinfo(host.c_str(), "0", &hints, &found); rc != 0) {
    throw std::runtime_error("paisoar launch: cannot resolve --master_addr '" + host +
                             "': " + gai_strerror(rc) + ". Give an address of this machine.");
  }
  std::string last_error = "no address";
  int port = 0;
  for (addrinfo* a = found; a != nullptr && port == 0; a = a->ai_next) {
    UniqueFd sock(::socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC, a->ai_protocol));
    if (!sock) {
      last_error = std::strerror(errno);
      continue;
    }
    sockaddr_storage bound{};
    socklen_t len = sizeof(bound);
    if (::bind(sock.get(), a->ai_addr, a->ai_addrlen) != 0 ||
        ::getsockname(sock.get(), reinterpret_cast<sockaddr*>(&bound), &len) != 0) {
      last_error = std::strerror(errno);
      continue;
    }
    if (bound.ss_family == AF_INET)
      port = ntohs(reinterpret_cast<sockaddr_in*>(&bound)->sin_port);
    else if (bound.ss_family == AF_INET6)
      port = ntohs(reinterpret_cast<sockaddr_in6*>(&bound)->sin6_port);
  }
  freeaddrinfo(found);
  if (port == 0) {
    throw std::runtime_error("paisoar launch: cannot bind a port on --master_addr '" + host +
                             "' to pick a free one (" + last_error +
                             "). Use an address of this machine, or give --master_port.");
  }
  return port;
}

}  // namespace paisoar::launch
