// StoreState: c10d TCPStore's request semantics over an in-memory map.
#include "launch/store_state.h"

#include <algorithm>
#include <cerrno>
#include <cstdlib>

namespace paisoar::launch::store {
namespace {

// c10d parses ADD's stored value with std::stoll: leading blanks and a sign,
// then digits; what follows the digits is ignored.
bool parse_counter(const std::string& text, std::int64_t* value) {
  errno = 0;
  char* end = nullptr;
  const long long v = std::strtoll(text.c_str(), &end, 10);
  if (end == text.c_str() || errno == ERANGE) return false;
  *value = v;
  return true;
}

}  // namespace

void StoreState::store_value(const std::string& key, std::string value,
                             std::vector<Reply>& replies) {
  values_[key] = std::move(value);
  auto waiting = waiting_.find(key);
  if (waiting == waiting_.end()) return;
  for (ConnId conn : waiting->second) {
    auto left = missing_.find(conn);
    if (left == missing_.end() || --left->second > 0) continue;
    missing_.erase(left);
    replies.push_back({conn, encode_stop_waiting_reply()});
  }
  waiting_.erase(waiting);
}

ApplyResult StoreState::apply(ConnId from, const Request& r) {
  ApplyResult result;
  auto& replies = result.replies;
  const std::string& key = r.keys.empty() ? std::string() : r.keys.front();
  switch (r.type) {
    case QueryType::kSet:
      store_value(key, r.value, replies);
      if (key.rfind(kConnectionKeyPrefix, 0) == 0) owners_[key] = from;
      break;
    case QueryType::kCompareSet: {
      // As c10d: a missing key is created only when the expected value is
      // empty; the reply is the value now stored (or the expected one when
      // the key is missing and was not created).
      auto it = values_.find(key);
      if (it == values_.end()) {
        if (r.value.empty()) {
          replies.push_back({from, encode_bytes_reply(r.desired)});
          store_value(key, r.desired, replies);
        } else {
          replies.push_back({from, encode_bytes_reply(r.value)});
        }
      } else {
        if (it->second == r.value) it->second = r.desired;
        replies.push_back({from, encode_bytes_reply(it->second)});
      }
      break;
    }
    case QueryType::kGet: {
      auto it = values_.find(key);
      if (it == values_.end()) {
        result.close_sender = true;
      } else {
        replies.push_back({from, encode_bytes_reply(it->second)});
      }
      break;
    }
    case QueryType::kAdd: {
      std::int64_t value = r.delta;
      auto it = values_.find(key);
      if (it != values_.end()) {
        std::int64_t old = 0;
        if (!parse_counter(it->second, &old)) {
          result.close_sender = true;
          break;
        }
        value = static_cast<std::int64_t>(static_cast<std::uint64_t>(old) +
                                          static_cast<std::uint64_t>(r.delta));
      }
      replies.push_back({from, encode_int_reply(value)});
      store_value(key, std::to_string(value), replies);
      break;
    }
    case QueryType::kCheck: {
      const bool ready = std::all_of(r.keys.begin(), r.keys.end(),
                                     [&](const std::string& k) { return values_.count(k) > 0; });
      replies.push_back({from, encode_check_reply(ready)});
      break;
    }
    case QueryType::kWait: {
      std::size_t missing = 0;
      for (const std::string& k : r.keys) {
        if (values_.count(k) > 0) continue;
        waiting_[k].push_back(from);
        ++missing;
      }
      if (missing == 0) {
        replies.push_back({from, encode_stop_waiting_reply()});
      } else {
        missing_[from] = missing;
      }
      break;
    }
    case QueryType::kGetNumKeys:
      replies.push_back({from, encode_int_reply(static_cast<std::int64_t>(values_.size()))});
      break;
    case QueryType::kDeleteKey:
      replies.push_back({from, encode_int_reply(static_cast<std::int64_t>(values_.erase(key)))});
      break;
    case QueryType::kWatchKey:
      // Watches arrive on c10d's second (callback) connection, which never
      // authenticates; paisoar does not use them.
      result.close_sender = true;
      break;
  }
  return result;
}

void StoreState::drop(ConnId conn) {
  missing_.erase(conn);
  for (auto it = owners_.begin(); it != owners_.end();) {
    if (it->second != conn) {
      ++it;
      continue;
    }
    values_.erase(it->first);
    it = owners_.erase(it);
  }
  for (auto it = waiting_.begin(); it != waiting_.end();) {
    auto& conns = it->second;
    conns.erase(std::remove(conns.begin(), conns.end(), conn), conns.end());
    it = conns.empty() ? waiting_.erase(it) : std::next(it);
  }
}

}  // namespace paisoar::launch::store
