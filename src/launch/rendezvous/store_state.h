// The key-value state behind the launcher's rendezvous store, with the
// semantics of LibTorch 2.x's TCPStore server (its default, libuv one, as
// torch 2.14.1 answers): SET, COMPARE_SET, GET, ADD, CHECK, WAIT (answered
// when every key exists), GETNUMKEYS, DELETE_KEY, APPEND, MULTI_GET,
// MULTI_SET, CANCEL_WAIT, the QUEUE_* queries, LIST_KEYS and BARRIER. The
// connection-level queries (VALIDATE, PING) and the job token are the serve
// loop's. Knows nothing of sockets: connections are ids, and apply() returns
// the bytes to send to each, so the rules are testable without a network.
#pragma once

#include <cstdint>
#include <deque>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "launch/rendezvous/store_protocol.h"

namespace paisoar::launch::store {

using ConnId = std::uint64_t;

struct Reply {
  ConnId to = 0;
  std::string bytes;
};

struct ApplyResult {
  // In order; may include WAIT or BARRIER replies to other connections that
  // a write woke.
  std::vector<Reply> replies;
  // The request cannot be answered the way c10d's server would (ADD or
  // BARRIER on a value that is not a number; VALIDATE or PING, which are not
  // the state's): c10d's server drops the connection then, and so does ours.
  bool close_sender = false;
};

// Keys under this prefix (as on the wire) live only as long as the
// connection that SET them: they are deleted when it closes. The launchers of
// a multi-node job show that they are alive with them; c10d has no such keys.
inline constexpr const char* kConnectionKeyPrefix = "/paisoar/launch/alive/";

// Not thread-safe: owned by the store server's thread. A connection has at
// most one WAIT or BARRIER outstanding (a c10d client waits for each answer);
// a new one replaces what it waited for before.
class StoreState {
 public:
  ApplyResult apply(ConnId from, const Request& request);

  // Forgets what `conn` waits for, and deletes its connection keys (it closed).
  void drop(ConnId conn);

  // Values, as GETNUMKEYS counts them (queues are not keys).
  std::size_t num_keys() const { return values_.size(); }

 private:
  // Stores `value` under `key` and answers the waits it completes.
  void store_value(const std::string& key, std::string value, std::vector<Reply>& replies);
  // ADD's rule: the decimal counter at `key` plus `delta`; false when the
  // value there is not a number.
  bool add_to_counter(const std::string& key, std::int64_t delta, std::int64_t* now);
  void wait_for(ConnId from, const std::vector<std::string>& keys, std::vector<Reply>& replies);
  void barrier(ConnId from, const std::string& key, std::int64_t world_size, std::int64_t count,
               std::vector<Reply>& replies);
  // A QUEUE_PUSH wakes the first connection waiting for the queue's key.
  void wake_one(const std::string& key, std::vector<Reply>& replies);
  // Forgets the WAIT or BARRIER `conn` has outstanding.
  void cancel_wait(ConnId conn);
  // A key a WAIT or CHECK counts as there: a value, or a queue with items.
  bool ready(const std::string& key) const;

  std::map<std::string, std::string> values_;
  std::map<std::string, std::deque<std::string>> queues_;
  // key -> connections waiting for it (one entry per time the key was named).
  std::map<std::string, std::vector<ConnId>> waiting_;
  // connection -> keys it still waits for.
  std::map<ConnId, std::size_t> missing_;
  // key -> BARRIER arrivals waiting for its counter to reach their world size.
  std::map<std::string, std::vector<std::pair<ConnId, std::int64_t>>> barriers_;
  // kConnectionKeyPrefix key -> the connection that set it last.
  std::map<std::string, ConnId> owners_;
};

}  // namespace paisoar::launch::store
