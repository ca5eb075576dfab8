// Encoding and decoding of c10d 1.13 TCPStore requests and replies.
#include "launch/store_protocol.h"

namespace paisoar::launch::store {
namespace {

// Reads fields off the front of a buffer; a read past the end marks the
// reader short (the request is incomplete) and yields zeros.
class Reader {
 public:
  explicit Reader(std::string_view in) : in_(in) {}

  bool short_read() const { return short_; }
  std::size_t position() const { return pos_; }

  std::uint64_t u64() {
    if (in_.size() - pos_ < 8) return fail();
    std::uint64_t v = 0;
    for (int i = 0; i < 8; ++i) v |= std::uint64_t{static_cast<unsigned char>(in_[pos_ + i])} << (8 * i);
    pos_ += 8;
    return v;
  }

  // A length-prefixed field; false when its length is beyond `max`.
  bool field(std::uint64_t max, std::string* out) {
    const std::uint64_t n = u64();
    if (short_) return true;
    if (n > max) return false;
    if (in_.size() - pos_ < n) {
      fail();
      return true;
    }
    out->assign(in_.data() + pos_, static_cast<std::size_t>(n));
    pos_ += static_cast<std::size_t>(n);
    return true;
  }

 private:
  std::uint64_t fail() {
    short_ = true;
    pos_ = in_.size();
    return 0;
  }

  std::string_view in_;
  std::size_t pos_ = 0;
  bool short_ = false;
};

void put_u64(std::string& out, std::uint64_t v) {
  for (int i = 0; i < 8; ++i) out.push_back(static_cast<char>((v >> (8 * i)) & 0xff));
}

void put_field(std::string& out, std::string_view bytes) {
  put_u64(out, bytes.size());
  out.append(bytes);
}

}  // namespace

DecodeStatus decode_request(std::string_view in, const DecodeLimits& limits, Request* out,
                            std::size_t* consumed) {
  if (in.empty()) return DecodeStatus::kIncomplete;
  const auto type_byte = static_cast<std::uint8_t>(in[0]);
  if (type_byte > static_cast<std::uint8_t>(QueryType::kDeleteKey)) return DecodeStatus::kMalformed;
  Request r;
  r.type = static_cast<QueryType>(type_byte);
  Reader reader(in.substr(1));
  const std::uint64_t max = limits.max_field_bytes;
  bool ok = true;
  switch (r.type) {
    case QueryType::kSet:
    case QueryType::kCompareSet:
    case QueryType::kGet:
    case QueryType::kAdd:
    case QueryType::kDeleteKey:
    case QueryType::kWatchKey:
      r.keys.emplace_back();
      ok = reader.field(max, &r.keys.back());
      if (r.type == QueryType::kSet || r.type == QueryType::kCompareSet)
        ok = ok && reader.field(max, &r.value);
      if (r.type == QueryType::kCompareSet) ok = ok && reader.field(max, &r.desired);
      if (r.type == QueryType::kAdd) r.delta = static_cast<std::int64_t>(reader.u64());
      break;
    case QueryType::kCheck:
    case QueryType::kWait: {
      const std::uint64_t n = reader.u64();
      if (n > limits.max_keys) return DecodeStatus::kMalformed;
      for (std::uint64_t i = 0; ok && !reader.short_read() && i < n; ++i) {
        r.keys.emplace_back();
        ok = reader.field(max, &r.keys.back());
      }
      break;
    }
    case QueryType::kGetNumKeys:
      break;
  }
  if (!ok) return DecodeStatus::kMalformed;
  if (reader.short_read()) return DecodeStatus::kIncomplete;
  *consumed = 1 + reader.position();
  *out = std::move(r);
  return DecodeStatus::kComplete;
}

std::string encode_request(const Request& r) {
  std::string out(1, static_cast<char>(r.type));
  const std::string no_key;
  const std::string& key = r.keys.empty() ? no_key : r.keys.front();
  switch (r.type) {
    case QueryType::kSet:
      put_field(out, key);
      put_field(out, r.value);
      break;
    case QueryType::kCompareSet:
      put_field(out, key);
      put_field(out, r.value);
      put_field(out, r.desired);
      break;
    case QueryType::kAdd:
      put_field(out, key);
      put_u64(out, static_cast<std::uint64_t>(r.delta));
      break;
    case QueryType::kGet:
    case QueryType::kDeleteKey:
    case QueryType::kWatchKey:
      put_field(out, key);
      break;
    case QueryType::kCheck:
    case QueryType::kWait:
      put_u64(out, r.keys.size());
      for (const std::string& k : r.keys) put_field(out, k);
      break;
    case QueryType::kGetNumKeys:
      break;
  }
  return out;
}

std::string encode_bytes_reply(std::string_view bytes) {
  std::string out;
  put_field(out, bytes);
  return out;
}

std::string encode_int_reply(std::int64_t value) {
  std::string out;
  put_u64(out, static_cast<std::uint64_t>(value));
  return out;
}

std::string encode_check_reply(bool ready) {
  return std::string(1, static_cast<char>(ready ? CheckReply::kReady : CheckReply::kNotReady));
}

std::string encode_stop_waiting_reply() {
  return std::string(1, static_cast<char>(WaitReply::kStopWaiting));
}

bool decode_bytes_reply(std::string_view in, std::string* out, std::size_t* consumed) {
  Reader reader(in);
  if (!reader.field(~std::uint64_t{0}, out) || reader.short_read()) return false;
  *consumed = reader.position();
  return true;
}

}  // namespace paisoar::launch::store
