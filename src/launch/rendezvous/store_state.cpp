// StoreState: c10d 2.x TCPStore's request semantics over in-memory maps.
#include "launch/rendezvous/store_state.h"

#include <algorithm>
#include <cerrno>
#include <cstdlib>

namespace paisoar::launch::store {
namespace {

// c10d parses a counter with std::stoll: leading blanks and a sign, then
// digits; what follows the digits is ignored.
bool parse_counter(const std::string& text, std::int64_t* value) {
  errno = 0;
  char* end = nullptr;
  const long long v = std::strtoll(text.c_str(), &end, 10);
  if (end == text.c_str() || errno == ERANGE) return false;
  *value = v;
  return true;
}

ConnId conn_of(ConnId entry) { return entry; }
ConnId conn_of(const std::pair<ConnId, std::int64_t>& entry) { return entry.first; }

// Removes `conn`'s entries from every key's list, and the lists left empty.
template <typename Entry>
void erase_conn(std::map<std::string, std::vector<Entry>>& by_key, ConnId conn) {
  for (auto it = by_key.begin(); it != by_key.end();) {
    auto& entries = it->second;
    entries.erase(std::remove_if(entries.begin(), entries.end(),
                                 [conn](const Entry& e) { return conn_of(e) == conn; }),
                  entries.end());
    it = entries.empty() ? by_key.erase(it) : std::next(it);
  }
}

const std::string kStopWaiting = encode_wait_reply(WaitReply::kStopWaiting);

}  // namespace

bool StoreState::ready(const std::string& key) const {
  if (values_.count(key) > 0) return true;
  auto q = queues_.find(key);
  return q != queues_.end() && !q->second.empty();
}

void StoreState::store_value(const std::string& key, std::string value,
                             std::vector<Reply>& replies) {
  std::string& stored = values_[key];
  stored = std::move(value);
  if (auto waiting = waiting_.find(key); waiting != waiting_.end()) {
    for (ConnId conn : waiting->second) {
      auto left = missing_.find(conn);
      if (left == missing_.end() || --left->second > 0) continue;
      missing_.erase(left);
      replies.push_back({conn, kStopWaiting});
    }
    waiting_.erase(waiting);
  }
  auto barrier = barriers_.find(key);
  std::int64_t count = 0;
  if (barrier == barriers_.end() || !parse_counter(stored, &count)) return;
  auto& arrivals = barrier->second;
  for (auto it = arrivals.begin(); it != arrivals.end();) {
    if (count < it->second) {
      ++it;
      continue;
    }
    replies.push_back({it->first, kStopWaiting});
    it = arrivals.erase(it);
  }
  if (arrivals.empty()) barriers_.erase(barrier);
}

bool StoreState::add_to_counter(const std::string& key, std::int64_t delta, std::int64_t* now) {
  std::int64_t value = delta;
  if (auto it = values_.find(key); it != values_.end()) {
    std::int64_t old = 0;
    if (!parse_counter(it->second, &old)) return false;
    value = static_cast<std::int64_t>(static_cast<std::uint64_t>(old) +
                                      static_cast<std::uint64_t>(delta));
  }
  *now = value;
  return true;
}

void StoreState::wait_for(ConnId from, const std::vector<std::string>& keys,
                          std::vector<Reply>& replies) {
  cancel_wait(from);
  std::size_t missing = 0;
  for (const std::string& k : keys) {
    if (ready(k)) continue;
    waiting_[k].push_back(from);
    ++missing;
  }
  if (missing == 0) {
    replies.push_back({from, kStopWaiting});
  } else {
    missing_[from] = missing;
  }
}

void StoreState::barrier(ConnId from, const std::string& key, std::int64_t world_size,
                         std::int64_t count, std::vector<Reply>& replies) {
  cancel_wait(from);
  if (count >= world_size) {
    replies.push_back({from, kStopWaiting});
  } else {
    barriers_[key].emplace_back(from, world_size);
  }
}

void StoreState::wake_one(const std::string& key, std::vector<Reply>& replies) {
  auto waiting = waiting_.find(key);
  if (waiting == waiting_.end()) return;
  const ConnId conn = waiting->second.front();
  waiting->second.erase(waiting->second.begin());
  if (waiting->second.empty()) waiting_.erase(waiting);
  auto left = missing_.find(conn);
  if (left == missing_.end() || --left->second > 0) return;
  missing_.erase(left);
  replies.push_back({conn, kStopWaiting});
}

void StoreState::cancel_wait(ConnId conn) {
  if (missing_.erase(conn) > 0) erase_conn(waiting_, conn);
  erase_conn(barriers_, conn);
}

ApplyResult StoreState::apply(ConnId from, const Request& r) {
  ApplyResult result;
  auto& replies = result.replies;
  static const std::string kNoKey;
  const std::string& key = r.keys.empty() ? kNoKey : r.keys.front();
  switch (r.type) {
    case QueryType::kSet:
      store_value(key, r.value, replies);
      if (key.rfind(kConnectionKeyPrefix, 0) == 0) owners_[key] = from;
      break;
    case QueryType::kCompareSet: {
      // A missing key is created only when the expected value is empty; the
      // reply is the value now stored (or the expected one when the key is
      // missing and was not created).
      auto it = values_.find(key);
      if (it == values_.end()) {
        replies.push_back({from, encode_bytes_reply(r.value.empty() ? r.desired : r.value)});
        if (r.value.empty()) store_value(key, r.desired, replies);
      } else {
        if (it->second == r.value) it->second = r.desired;
        replies.push_back({from, encode_bytes_reply(it->second)});
      }
      break;
    }
    case QueryType::kGet: {
      // c10d's client WAITs before it GETs; a key deleted in between is "".
      auto it = values_.find(key);
      replies.push_back({from, encode_bytes_reply(it == values_.end() ? "" : it->second)});
      break;
    }
    case QueryType::kAdd:
    case QueryType::kBarrier: {
      std::int64_t now = 0;
      if (!add_to_counter(key, r.type == QueryType::kAdd ? r.delta : 1, &now)) {
        result.close_sender = true;
        break;
      }
      if (r.type == QueryType::kAdd) replies.push_back({from, encode_int_reply(now)});
      store_value(key, std::to_string(now), replies);
      if (r.type == QueryType::kBarrier) barrier(from, key, r.delta, now, replies);
      break;
    }
    case QueryType::kCheck: {
      const bool all = std::all_of(r.keys.begin(), r.keys.end(),
                                   [&](const std::string& k) { return ready(k); });
      replies.push_back({from, encode_check_reply(all)});
      break;
    }
    case QueryType::kWait:
      wait_for(from, r.keys, replies);
      break;
    case QueryType::kGetNumKeys:
      replies.push_back({from, encode_int_reply(static_cast<std::int64_t>(values_.size()))});
      break;
    case QueryType::kDeleteKey:
      replies.push_back({from, encode_int_reply(static_cast<std::int64_t>(values_.erase(key)))});
      break;
    case QueryType::kAppend: {
      auto it = values_.find(key);
      store_value(key, it == values_.end() ? r.value : it->second + r.value, replies);
      break;
    }
    case QueryType::kMultiGet: {
      std::string bytes;
      for (const std::string& k : r.keys) {
        auto it = values_.find(k);
        bytes += encode_bytes_reply(it == values_.end() ? "" : it->second);
      }
      replies.push_back({from, std::move(bytes)});
      break;
    }
    case QueryType::kMultiSet:
      for (std::size_t i = 0; i < r.keys.size(); ++i)
        store_value(r.keys[i], i < r.values.size() ? r.values[i] : "", replies);
      break;
    case QueryType::kCancelWait:
      // Sent after the client's own timeout; when the wait was answered
      // first, the client reads that STOP_WAITING, then this.
      cancel_wait(from);
      replies.push_back({from, encode_wait_reply(WaitReply::kWaitCanceled)});
      break;
    case QueryType::kQueuePush:
      queues_[key].push_back(r.value);
      wake_one(key, replies);
      break;
    case QueryType::kQueuePop: {
      auto q = queues_.find(key);
      const std::int64_t length = q == queues_.end() ? 0 : static_cast<std::int64_t>(q->second.size());
      replies.push_back({from, encode_queue_pop_reply(length, length > 0 ? q->second.front() : "")});
      if (length > 0) q->second.pop_front();
      if (length == 1) queues_.erase(q);
      break;
    }
    case QueryType::kQueueLen: {
      auto q = queues_.find(key);
      replies.push_back(
          {from, encode_int_reply(q == queues_.end() ? 0 : static_cast<std::int64_t>(q->second.size()))});
      break;
    }
    case QueryType::kListKeys: {
      std::vector<std::string> keys;
      keys.reserve(values_.size());
      for (const auto& [k, v] : values_) keys.push_back(k);
      replies.push_back({from, encode_keys_reply(keys)});
      break;
    }
    case QueryType::kValidate:
    case QueryType::kPing:
      result.close_sender = true;  // the serve loop's; never here
      break;
  }
  return result;
}

void StoreState::drop(ConnId conn) {
  cancel_wait(conn);
  for (auto it = owners_.begin(); it != owners_.end();) {
    if (it->second != conn) {
      ++it;
      continue;
    }
    values_.erase(it->first);
    it = owners_.erase(it);
  }
}

}  // namespace paisoar::launch::store
