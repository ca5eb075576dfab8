// Test helper: a raw TCP client of the launcher's rendezvous store, written
// without LibTorch, that sends requests in c10d's LibTorch 2.x format and
// reads replies with a deadline, so a test can play a rank, an intruder or a
// client of another protocol.
#pragma once

#include <cstdint>
#include <string>

#include "launch/rendezvous/store_protocol.h"
#include "launch/unique_fd.h"

namespace paisoar::launch::testing {

class StoreTestClient {
 public:
  // Connects to host:port (numeric IPv4 or IPv6). connected() says whether it worked.
  StoreTestClient(const std::string& host, int port);

  bool connected() const { return fd_.valid(); }
  // errno of the failed connect (ECONNREFUSED, ...), 0 when connected.
  int connect_error() const { return connect_errno_; }

  int fd() const { return fd_.get(); }

  void send(const store::Request& request);
  // Any bytes, e.g. what a client of another protocol would send.
  void send_raw(const std::string& bytes);
  // c10d 2.x's connection setup: VALIDATE, then PING; true when the nonce
  // came back.
  bool handshake();
  // The job-token check: COMPARE_SET of the auth key with `token`.
  void send_token(const std::string& token);
  // handshake(), send_token(), and true when the answer is the token.
  bool join(const std::string& token);

  // Reads exactly n bytes; false when the server closed first or `timeout_s` passed.
  bool read_exact(std::size_t n, std::string* out, double timeout_s = 10);
  // Reads a byte-vector reply (GET, COMPARE_SET).
  bool read_bytes_reply(std::string* value, double timeout_s = 10);
  // True when the server closed the connection (end of file or reset)
  // within `timeout_s`, with nothing more to read.
  bool closed_by_server(double timeout_s = 10);

 private:
  UniqueFd fd_;
  int connect_errno_ = 0;
  std::string buffered_;
};

}  // namespace paisoar::launch::testing
