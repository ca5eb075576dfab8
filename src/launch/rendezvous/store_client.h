// A client of the launcher's rendezvous store for the launchers themselves
// (multi-node jobs: every node's launcher, node 0's included, talks to node
// 0's store). Speaks c10d TCPStore's LibTorch 2.x protocol
// (store_protocol.h): opens with the validation handshake and a PING, shows
// the job token first, and bounds every wait, so a store that went away is
// an error (StoreConnectionLost), never a hang. Links no LibTorch.
#pragma once

#include <chrono>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

#include "launch/rendezvous/store_protocol.h"
#include "launch/unique_fd.h"

namespace paisoar::launch {

// The store could not be reached, refused the token, closed the connection
// or did not answer in time. what() names the store's address and says why.
class StoreConnectionLost : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Not thread-safe: one request at a time, each answered before the next.
// The exception is wait_async(): its answer arrives whenever the keys exist,
// so a connection with a WAIT outstanding must not be used for anything else
// until wait_ready() said yes (use a second client for requests).
class StoreClient {
 public:
  using Clock = std::chrono::steady_clock;

  // Connects to host:port (an address or a name), retrying while nothing
  // listens there yet, until `deadline`; then shows `token`. Throws
  // StoreConnectionLost when no connection was made by `deadline`, the
  // store did not echo the handshake's PING (it is no 2.x TCPStore) or it
  // refused the token.
  StoreClient(const std::string& host, int port, const std::string& token,
              Clock::time_point deadline);

  // Keys as on the wire (c10d clients put "/" in front of their caller's key).
  void set(const std::string& key, const std::string& value);
  // The value, "" when the key is missing (c10d's own client WAITs for the
  // key first; this one does not).
  std::string get(const std::string& key);
  // c10d's compareSet: stores `desired` when the value is `expected` (a
  // missing key counts as ""); returns the value now stored.
  std::string compare_set(const std::string& key, const std::string& expected,
                          const std::string& desired);
  std::int64_t add(const std::string& key, std::int64_t delta);
  bool check(const std::vector<std::string>& keys);

  // Sends WAIT for `keys` without waiting for the answer; poll fd() for it.
  void wait_async(const std::vector<std::string>& keys);
  // Reads the answer to wait_async() if it has arrived, without blocking
  // (`block_for` > 0: waits that long for it). Throws StoreConnectionLost
  // when the store closed the connection.
  bool wait_ready(std::chrono::milliseconds block_for = std::chrono::milliseconds(0));

  // For poll(): readable when a WAIT answer (or the store's hang-up) arrived.
  int fd() const { return fd_.get(); }
  // "host:port", for messages.
  const std::string& where() const { return where_; }

 private:
  void send(const store::Request& request);
  // VALIDATE, then PING with this process's id as the nonce, as c10d's client.
  void handshake();
  // Reads exactly n bytes before `deadline`.
  std::string read_exact(std::size_t n, Clock::time_point deadline);
  std::string read_bytes_reply();
  std::int64_t read_int_reply();
  [[noreturn]] void lost(const std::string& why) const;

  UniqueFd fd_;
  std::string where_;
  std::string buffered_;
  std::chrono::milliseconds reply_timeout_{30000};
};

}  // namespace paisoar::launch
