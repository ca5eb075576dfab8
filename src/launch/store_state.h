// The key-value state behind the launcher's rendezvous store, with c10d
// TCPStore's semantics: SET, COMPARE_SET, GET, ADD, CHECK, WAIT (answered
// when every key exists), GETNUMKEYS, DELETE_KEY. Knows nothing of sockets:
// connections are ids, and apply() returns the bytes to send to each, so the
// rules are testable without a network.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "launch/store_protocol.h"

namespace paisoar::launch::store {

using ConnId = std::uint64_t;

struct Reply {
  ConnId to = 0;
  std::string bytes;
};

struct ApplyResult {
  // In order; may include WAIT replies to other connections that a write woke.
  std::vector<Reply> replies;
  // The request cannot be answered the way c10d's server would (GET of a
  // missing key, ADD to a value that is not a number, WATCH_KEY): c10d's
  // server drops the connection then, and so does ours.
  bool close_sender = false;
};

// Keys under this prefix (as on the wire) live only as long as the
// connection that SET them: they are deleted when it closes. The launchers of
// a multi-node job show that they are alive with them; c10d has no such keys.
inline constexpr const char* kConnectionKeyPrefix = "/paisoar/launch/alive/";

// Not thread-safe: owned by the store server's thread.
class StoreState {
 public:
  ApplyResult apply(ConnId from, const Request& request);

  // Forgets what `conn` waits for, and deletes its connection keys (it closed).
  void drop(ConnId conn);

  std::size_t num_keys() const { return values_.size(); }

 private:
  void store_value(const std::string& key, std::string value, std::vector<Reply>& replies);

  std::map<std::string, std::string> values_;
  // key -> connections waiting for it (one entry per time the key was named).
  std::map<std::string, std::vector<ConnId>> waiting_;
  // connection -> keys it still waits for.
  std::map<ConnId, std::size_t> missing_;
  // kConnectionKeyPrefix key -> the connection that set it last.
  std::map<std::string, ConnId> owners_;
};

}  // namespace paisoar::launch::store
