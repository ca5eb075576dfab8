// The launcher's rendezvous store: a TCP server speaking c10d TCPStore's
// LibTorch 2.x protocol (store_protocol.h), bound to one address only (the
// launcher's --master_addr, never the wildcard), that lets a connection do
// nothing until it has shown the job token. Every connection must open with
// 2.x's validation handshake (VALIDATE with the magic number; PINGs are
// echoed at any time); a client without it (LibTorch 1.x, whose first byte
// is a query) is closed unanswered and the launcher logs "refused a
// connection from ADDR:PORT: it speaks a TCPStore protocol older than
// LibTorch 2.x (no validation handshake); this launcher speaks 2.x's ...".
// The first request after the handshake must be COMPARE_SET of key kAuthKey
// with the token as the expected value (an unmodified c10d client can send
// it: compareSet of "paisoar/auth", since c10d puts "/" before keys). A
// right token is answered with the token; a wrong one with an empty value,
// then the connection is closed and the launcher logs "refused a connection
// from ADDR:PORT: wrong job token". Any other first request is refused the
// same way, unanswered. The job goes on either way.
#pragma once

#include <atomic>
#include <string>
#include <thread>

#include "launch/unique_fd.h"

namespace paisoar::launch {

// The key (as on the wire) whose COMPARE_SET authenticates a connection.
inline constexpr const char* kAuthKey = "/paisoar/auth";

struct StoreServerOptions {
  // Address to listen on: an IP address or a name of this machine. Only the
  // first address it resolves to that can be bound is used.
  std::string host = "127.0.0.1";
  // 0 picks a free port (see port()).
  int port = 0;
  // The job token; must not be empty.
  std::string token;
  // Where refusals are logged ("paisoar launch: refused ..." lines).
  int log_fd = 2;
};

// Thread safety: the server's state belongs to its own thread; the public
// methods only read what the constructor set. The thread starts with every
// signal blocked, so SIGCHLD, SIGINT, ... stay with the launcher's main
// thread (its signalfd). The destructor stops and joins the thread and
// closes every connection.
class StoreServer {
 public:
  // Binds, listens and starts serving. Throws std::runtime_error naming the
  // address and port and what to do when they cannot be bound.
  explicit StoreServer(StoreServerOptions options);
  ~StoreServer();
  StoreServer(const StoreServer&) = delete;
  StoreServer& operator=(const StoreServer&) = delete;

  // The port bound (the kernel's choice when options.port was 0).
  int port() const { return port_; }
  // The numeric address bound, e.g. "127.0.0.1" or "::1".
  const std::string& address() const { return address_; }

  // Connections open now (authenticated or not). Thread-safe. Node 0's
  // launcher waits for 0 before it exits, so that the other nodes'
  // launchers can read the job's verdict before the store goes away.
  std::size_t open_connections() const { return open_connections_.load(); }

 private:
  void serve();

  StoreServerOptions options_;
  UniqueFd listen_fd_;
  UniqueFd stop_read_;   // the thread polls it; the destructor closes stop_write_
  UniqueFd stop_write_;
  int port_ = 0;
  std::string address_;
  std::atomic<std::size_t> open_connections_{0};
  std::thread thread_;
};

}  // namespace paisoar::launch
