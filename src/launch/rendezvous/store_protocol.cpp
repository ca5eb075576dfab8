// Encoding and decoding of c10d 2.x TCPStore requests and replies.
#include "launch/rendezvous/store_protocol.h"

#include <algorithm>

namespace paisoar::launch::store {
namespace {

constexpr std::uint8_t kLastQueryType = static_cast<std::uint8_t>(QueryType::kBarrier);
// LibTorch 1.13's query types were 0 (SET) to 8 (DELETE_KEY).
constexpr std::uint8_t kLastQueryTypeOf113 = 8;

// Reads fields off the front of a buffer; a read past the end marks the
// reader short (the request is incomplete) and yields zeros.
class Reader {
 public:
  explicit Reader(std::string_view in) : in_(in) {}

  bool short_read() const { return short_; }
  std::size_t position() const { return pos_; }

  std::uint64_t u64() {
    if (in_.size() - pos_ < 8) return fail();
    const std::uint64_t v = read_u64(in_.substr(pos_, 8));
    pos_ += 8;
    return v;
  }

  std::uint32_t u32() {
    if (in_.size() - pos_ < 4) return static_cast<std::uint32_t>(fail());
    const std::uint32_t v = read_u32(in_.substr(pos_, 4));
    pos_ += 4;
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

void put_u32(std::string& out, std::uint32_t v) {
  for (int i = 0; i < 4; ++i) out.push_back(static_cast<char>((v >> (8 * i)) & 0xff));
}

void put_field(std::string& out, std::string_view bytes) {
  put_u64(out, bytes.size());
  out.append(bytes);
}

// Reads a key count and then, per key, the key and (with `values`) a value.
bool read_key_list(Reader& reader, const DecodeLimits& limits, Request& r,
                   std::vector<std::string>* values) {
  const std::uint64_t n = reader.u64();
  if (n > limits.max_keys) return false;
  for (std::uint64_t i = 0; !reader.short_read() && i < n; ++i) {
    r.keys.emplace_back();
    if (!reader.field(limits.max_field_bytes, &r.keys.back())) return false;
    if (values == nullptr) continue;
    values->emplace_back();
    if (!reader.field(limits.max_field_bytes, &values->back())) return false;
  }
  return true;
}

}  // namespace

std::uint64_t read_u64(std::string_view b) {
  std::uint64_t v = 0;
  for (int i = 0; i < 8; ++i) v |= std::uint64_t{static_cast<unsigned char>(b[i])} << (8 * i);
  return v;
}

std::uint32_t read_u32(std::string_view b) {
  std::uint32_t v = 0;
  for (int i = 0; i < 4; ++i) v |= std::uint32_t{static_cast<unsigned char>(b[i])} << (8 * i);
  return v;
}

DecodeStatus decode_request(std::string_view in, const DecodeLimits& limits, Request* out,
                            std::size_t* consumed) {
  if (in.empty()) return DecodeStatus::kIncomplete;
  const auto type_byte = static_cast<std::uint8_t>(in[0]);
  if (type_byte > kLastQueryType) return DecodeStatus::kMalformed;
  Request r;
  r.type = static_cast<QueryType>(type_byte);
  Reader reader(in.substr(1));
  const std::uint64_t max = limits.max_field_bytes;
  bool ok = true;
  switch (r.type) {
    case QueryType::kValidate:
    case QueryType::kPing:
      r.word = reader.u32();
      break;
    case QueryType::kSet:
    case QueryType::kAppend:
    case QueryType::kQueuePush:
    case QueryType::kCompareSet:
      r.keys.emplace_back();
      ok = reader.field(max, &r.keys.back()) && reader.field(max, &r.value);
      if (r.type == QueryType::kCompareSet) ok = ok && reader.field(max, &r.desired);
      break;
    case QueryType::kGet:
    case QueryType::kDeleteKey:
    case QueryType::kQueuePop:
    case QueryType::kQueueLen:
      r.keys.emplace_back();
      ok = reader.field(max, &r.keys.back());
      break;
    case QueryType::kAdd:
    case QueryType::kBarrier:
      r.keys.emplace_back();
      ok = reader.field(max, &r.keys.back());
      r.delta = static_cast<std::int64_t>(reader.u64());
      break;
    case QueryType::kCheck:
    case QueryType::kWait:
    case QueryType::kMultiGet:
      ok = read_key_list(reader, limits, r, nullptr);
      break;
    case QueryType::kMultiSet:
      ok = read_key_list(reader, limits, r, &r.values);
      break;
    case QueryType::kGetNumKeys:
    case QueryType::kCancelWait:
    case QueryType::kListKeys:
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
    case QueryType::kValidate:
    case QueryType::kPing:
      put_u32(out, r.word);
      break;
    case QueryType::kSet:
    case QueryType::kAppend:
    case QueryType::kQueuePush:
      put_field(out, key);
      put_field(out, r.value);
      break;
    case QueryType::kCompareSet:
      put_field(out, key);
      put_field(out, r.value);
      put_field(out, r.desired);
      break;
    case QueryType::kAdd:
    case QueryType::kBarrier:
      put_field(out, key);
      put_u64(out, static_cast<std::uint64_t>(r.delta));
      break;
    case QueryType::kGet:
    case QueryType::kDeleteKey:
    case QueryType::kQueuePop:
    case QueryType::kQueueLen:
      put_field(out, key);
      break;
    case QueryType::kCheck:
    case QueryType::kWait:
    case QueryType::kMultiGet:
      put_u64(out, r.keys.size());
      for (const std::string& k : r.keys) put_field(out, k);
      break;
    case QueryType::kMultiSet:
      put_u64(out, r.keys.size());
      for (std::size_t i = 0; i < r.keys.size(); ++i) {
        put_field(out, r.keys[i]);
        put_field(out, i < r.values.size() ? std::string_view(r.values[i]) : std::string_view());
      }
      break;
    case QueryType::kGetNumKeys:
    case QueryType::kCancelWait:
    case QueryType::kListKeys:
      break;
  }
  return out;
}

Handshake classify_handshake(std::string_view in) {
  if (in.empty()) return Handshake::kIncomplete;
  const auto first = static_cast<std::uint8_t>(in[0]);
  if (first == static_cast<std::uint8_t>(QueryType::kValidate)) {
    std::string magic;
    put_u32(magic, kValidationMagic);
    const std::size_t n = std::min<std::size_t>(in.size() - 1, 4);
    // A 1.13 SET: byte 0, then its key's uint64 length where the magic should be.
    if (in.substr(1, n) != std::string_view(magic).substr(0, n)) return Handshake::kOlderProtocol;
    return n == 4 ? Handshake::kValid : Handshake::kIncomplete;
  }
  return first <= kLastQueryTypeOf113 ? Handshake::kOlderProtocol : Handshake::kNotTcpStore;
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

std::string encode_wait_reply(WaitReply reply) {
  return std::string(1, static_cast<char>(reply));
}

std::string encode_ping_reply(std::uint32_t nonce) {
  std::string out;
  put_u32(out, nonce);
  return out;
}

std::string encode_queue_pop_reply(std::int64_t length, std::string_view item) {
  std::string out = encode_int_reply(length);
  if (length > 0) put_field(out, item);
  return out;
}

std::string encode_keys_reply(const std::vector<std::string>& keys) {
  std::string out = encode_int_reply(static_cast<std::int64_t>(keys.size()));
  for (const std::string& k : keys) put_field(out, k);
  return out;
}

bool decode_bytes_reply(std::string_view in, std::string* out, std::size_t* consumed) {
  Reader reader(in);
  if (!reader.field(~std::uint64_t{0}, out) || reader.short_read()) return false;
  *consumed = reader.position();
  return true;
}

}  // namespace paisoar::launch::store
