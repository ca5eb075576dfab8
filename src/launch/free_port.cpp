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
namespace {

// Binds `port` (0: any) on the first address of `host` that accepts it and
// returns the bound port, or 0 with `error` set. The socket is closed again.
int try_bind(const std::string& host, int port, std::string* error) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* found = nullptr;
  const std::string service = std::to_string(port);
  if (int rc = getaddrinfo(host.c_str(), service.c_str(), &hints, &found); rc != 0) {
    throw std::runtime_error("paisoar launch: cannot resolve the rendezvous host '" + host +
                             "' (--master_addr or --rdzv_endpoint): " + gai_strerror(rc) +
                             ". Give an address of this machine.");
  }
  *error = "no address";
  int bound_port = 0;
  for (addrinfo* a = found; a != nullptr && bound_port == 0; a = a->ai_next) {
    UniqueFd sock(::socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC, a->ai_protocol));
    if (!sock) {
      *error = std::strerror(errno);
      continue;
    }
    const int one = 1;  // as a store would: a port in TIME_WAIT counts as free
    ::setsockopt(sock.get(), SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    sockaddr_storage bound{};
    socklen_t len = sizeof(bound);
    if (::bind(sock.get(), a->ai_addr, a->ai_addrlen) != 0 ||
        ::getsockname(sock.get(), reinterpret_cast<sockaddr*>(&bound), &len) != 0) {
      *error = std::strerror(errno);
      continue;
    }
    if (bound.ss_family == AF_INET)
      bound_port = ntohs(reinterpret_cast<sockaddr_in*>(&bound)->sin_port);
    else if (bound.ss_family == AF_INET6)
      bound_port = ntohs(reinterpret_cast<sockaddr_in6*>(&bound)->sin6_port);
  }
  freeaddrinfo(found);
  return bound_port;
}

}  // namespace

int pick_free_port(const std::string& host) {
  std::string error;
  const int port = try_bind(host, 0, &error);
  if (port == 0) {
    throw std::runtime_error("paisoar launch: cannot bind a port on --master_addr '" + host +
                             "' to pick a free one (" + error +
                             "). Use an address of this machine, or give --master_port.");
  }
  return port;
}

bool port_is_free(const std::string& host, int port) {
  std::string error;
  return port > 0 && port <= 65535 && try_bind(host, port, &error) == port;
}

int pick_free_port_pair(const std::string& host) {
  constexpr int kTries = 50;
  for (int i = 0; i < kTries; ++i) {
    const int port = pick_free_port(host);
    if (port < 65535 && port_is_free(host, port + 1)) return port;
  }
  throw std::runtime_error("paisoar launch: found no two free consecutive ports on '" + host +
                           "' in " + std::to_string(kTries) + " tries; give --master_port.");
}

}  // namespace paisoar::launch
