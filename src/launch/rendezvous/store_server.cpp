// StoreServer: binds the rendezvous store to one address and runs its
// thread; the event loop (accepting, authenticating, serving, refusing) is in
// store_serve_loop.cpp.
#include "launch/rendezvous/store_server.h"

#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <pthread.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <stdexcept>

#include "launch/rendezvous/store_serve_loop.h"

namespace paisoar::launch {
namespace {

bool is_wildcard(const sockaddr* a) {
  if (a->sa_family == AF_INET)
    return reinterpret_cast<const sockaddr_in*>(a)->sin_addr.s_addr == htonl(INADDR_ANY);
  if (a->sa_family == AF_INET6) {
    const in6_addr& addr = reinterpret_cast<const sockaddr_in6*>(a)->sin6_addr;
    return IN6_IS_ADDR_UNSPECIFIED(&addr);
  }
  return false;
}

std::string where(const std::string& host, int port) {
  return (host.find(':') != std::string::npos ? "[" + host + "]" : host) + ":" +
         std::to_string(port);
}

}  // namespace

StoreServer::StoreServer(StoreServerOptions options) : options_(std::move(options)) {
  if (options_.token.empty()) throw std::invalid_argument("StoreServer: the job token is empty");
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* found = nullptr;
  const std::string service = std::to_string(options_.port);
  if (int rc = ::getaddrinfo(options_.host.c_str(), service.c_str(), &hints, &found); rc != 0) {
    throw std::runtime_error("paisoar launch: cannot resolve the rendezvous host '" + options_.host +
                             "' (--master_addr or --rdzv_endpoint) for the rendezvous store: " + gai_strerror(rc) +
                             ". Give an address of this machine.");
  }
  std::string last_error = "it resolves to no address";
  for (addrinfo* a = found; a != nullptr && !listen_fd_; a = a->ai_next) {
    if (is_wildcard(a->ai_addr)) {
      last_error = "it is the wildcard address, which would let every network in";
      continue;
    }
    UniqueFd sock(::socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC | SOCK_NONBLOCK,
                           a->ai_protocol));
    const int one = 1;
    if (sock) ::setsockopt(sock.get(), SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    if (!sock || ::bind(sock.get(), a->ai_addr, a->ai_addrlen) != 0 ||
        ::listen(sock.get(), SOMAXCONN) != 0) {
      last_error = std::strerror(errno);
      continue;
    }
    listen_fd_ = std::move(sock);
  }
  ::freeaddrinfo(found);
  if (!listen_fd_) {
    throw std::runtime_error(
        "paisoar launch: cannot start the rendezvous store on " +
        where(options_.host, options_.port) + " (" + last_error +
        "). --master_addr must be an address of the node with --node_rank 0 (127.0.0.1 for one "
        "node); if the port is in use, give another --master_port, or 0 to pick a free one on a "
        "single node.");
  }
  sockaddr_storage bound{};
  socklen_t len = sizeof(bound);
  ::getsockname(listen_fd_.get(), reinterpret_cast<sockaddr*>(&bound), &len);
  char host[NI_MAXHOST] = {};
  char port[NI_MAXSERV] = {};
  ::getnameinfo(reinterpret_cast<sockaddr*>(&bound), len, host, sizeof(host), port, sizeof(port),
                NI_NUMERICHOST | NI_NUMERICSERV);
  address_ = host;
  port_ = std::atoi(port);

  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0)
    throw std::runtime_error(std::string("paisoar launch: pipe2: ") + std::strerror(errno));
  stop_read_.reset(fds[0]);
  stop_write_.reset(fds[1]);

  // The thread inherits the mask in force when it is created: block every
  // signal for it, so that none is delivered to it instead of to the main
  // thread's signalfd (a SIGCHLD taken here would hang the supervisor).
  sigset_t all;
  sigset_t previous;
  ::sigfillset(&all);
  ::pthread_sigmask(SIG_SETMASK, &all, &previous);
  try {
    thread_ = std::thread([this] { serve(); });
  } catch (...) {
    ::pthread_sigmask(SIG_SETMASK, &previous, nullptr);
    throw;
  }
  ::pthread_sigmask(SIG_SETMASK, &previous, nullptr);
}

StoreServer::~StoreServer() {
  stop_write_.reset();  // the loop sees POLLHUP on stop_read_
  if (thread_.joinable()) thread_.join();
}

void StoreServer::serve() {
  StoreServeLoop loop(options_.token, options_.log_fd, listen_fd_.get(), stop_read_.get(),
                      &open_connections_);
  loop.run();
}

}  // namespace paisoar::launch
