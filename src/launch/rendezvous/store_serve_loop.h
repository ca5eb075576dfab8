// The rendezvous store's event loop: one poll() over the listening socket, a
// stop descriptor and every connection. A connection must open with c10d
// 2.x's validation handshake, and is served only after its first request
// past the handshake (PINGs aside) showed the job token (see
// store_server.h); requests are applied to a StoreState and replies written
// without blocking, so a client that does not read cannot stall the others.
#pragma once

#include <atomic>
#include <cstddef>
#include <map>
#include <string>

#include "launch/rendezvous/store_protocol.h"
#include "launch/rendezvous/store_state.h"
#include "launch/unique_fd.h"

namespace paisoar::launch {

// Lives on the store server's thread only; not thread-safe. Does not own the
// listening socket, the stop descriptor or `open_connections`, which it keeps
// equal to the number of open connections for other threads to read.
class StoreServeLoop {
 public:
  StoreServeLoop(std::string token, int log_fd, int listen_fd, int stop_fd,
                 std::atomic<std::size_t>* open_connections = nullptr);

  // Serves until stop_fd becomes readable or hangs up. Never throws: an
  // unexpected error is logged and ends the loop.
  void run() noexcept;

 private:
  struct Connection {
    UniqueFd fd;
    std::string peer;  // "1.2.3.4:5678", for messages
    std::string in;
    std::string out;
    // kNew: waiting for VALIDATE; kValidated: for the job token; then served.
    enum class Stage { kNew, kValidated, kAuthenticated } stage = Stage::kNew;
    bool close_when_sent = false;
  };

  void loop();
  void accept_new();
  // Reads what is there and serves every complete request; false: close it.
  bool on_readable(store::ConnId id, Connection& c);
  bool serve_requests(store::ConnId id, Connection& c);
  // The first bytes; false when they are not 2.x's handshake (refused) or incomplete.
  bool validate(Connection& c, std::size_t* used);
  // The first request; false when it was refused (the caller stops reading).
  bool authenticate(Connection& c, const store::Request& request);
  void refuse(Connection& c, const std::string& why);
  // Sends what fits now; false when the connection is broken.
  bool flush(Connection& c);
  void close(store::ConnId id);
  void log(const std::string& text);

  const std::string token_;
  const int log_fd_;
  const int listen_fd_;
  const int stop_fd_;
  std::atomic<std::size_t>* const open_connections_;
  std::map<store::ConnId, Connection> conns_;
  store::StoreState state_;
  store::ConnId next_id_ = 1;
  int refusals_logged_ = 0;
  bool accept_paused_ = false;  // accept4 ran out of descriptors
};

}  // namespace paisoar::launch
