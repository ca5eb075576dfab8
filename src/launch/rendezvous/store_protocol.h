// The wire format of c10d's TCPStore as LibTorch 2.x speaks it (checked
// against torch 2.14.1's client and server), so that an unmodified
// c10d::TCPStore client (C++ or Python) can talk to the launcher's
// rendezvous store. A request is one query-type byte followed by its fields,
// with no length header for the whole: a string or byte vector is a uint64
// length and the bytes; ADD's delta and BARRIER's world size an int64;
// CHECK, WAIT and MULTI_GET a uint64 key count and that many strings;
// VALIDATE's magic and PING's nonce a uint32. Integers are little-endian
// (what c10d writes on the machines it runs on). Replies have no framing and
// are read by position. Every connection starts with VALIDATE (no reply),
// then PING (echoed). Pure functions, no sockets.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace paisoar::launch::store {

// The query types of LibTorch 2.x, in its order (the byte on the wire).
enum class QueryType : std::uint8_t {
  kValidate = 0,
  kSet = 1,
  kCompareSet = 2,
  kGet = 3,
  kAdd = 4,
  kCheck = 5,
  kWait = 6,
  kGetNumKeys = 7,
  kDeleteKey = 8,
  kAppend = 9,
  kMultiGet = 10,
  kMultiSet = 11,
  kCancelWait = 12,
  kPing = 13,
  kQueuePush = 14,
  kQueuePop = 15,
  kQueueLen = 16,
  kListKeys = 17,
  kBarrier = 18,
};

// VALIDATE's magic number: the first thing a 2.x client sends.
inline constexpr std::uint32_t kValidationMagic = 0x3C85F7CE;

// CHECK's reply byte.
enum class CheckReply : std::uint8_t { kReady = 0, kNotReady = 1 };
// WAIT's and BARRIER's reply byte (STOP_WAITING), and CANCEL_WAIT's (WAIT_CANCELED).
enum class WaitReply : std::uint8_t { kStopWaiting = 0, kWaitCanceled = 1 };

// One decoded request. Keys are as on the wire: the c10d client puts "/" in
// front of the key its caller named.
struct Request {
  QueryType type = QueryType::kSet;
  // One key for the single-key queries; any number for CHECK, WAIT,
  // MULTI_GET and MULTI_SET; none for the others.
  std::vector<std::string> keys;
  // SET, APPEND, QUEUE_PUSH: the value. COMPARE_SET: the expected value.
  std::string value;
  // COMPARE_SET: the value to store when the expected one is there.
  std::string desired;
  // MULTI_SET: one value per key.
  std::vector<std::string> values;
  // ADD: the amount. BARRIER: the world size.
  std::int64_t delta = 0;
  // VALIDATE: the magic number. PING: the nonce.
  std::uint32_t word = 0;
};

// Bounds a decoder enforces, so that a length field from a stranger cannot
// make the server allocate gigabytes.
struct DecodeLimits {
  // Longest key or value, in bytes.
  std::uint64_t max_field_bytes = std::uint64_t{1} << 30;
  // Most keys in one CHECK, WAIT, MULTI_GET or MULTI_SET.
  std::uint64_t max_keys = std::uint64_t{1} << 20;
};

enum class DecodeStatus {
  kComplete,    // *out holds the request, *consumed the bytes it took
  kIncomplete,  // `in` holds the start of a valid request: read more
  kMalformed,   // unknown query type, or a field beyond the limits
};

// Decodes the request at the front of `in`. Cheap on a request that is still
// incomplete (only the length fields are read), so it may be called again as
// bytes arrive.
DecodeStatus decode_request(std::string_view in, const DecodeLimits& limits, Request* out,
                            std::size_t* consumed);

// The bytes a c10d 2.x client sends for `request` (for the launcher's own
// client and for tests).
std::string encode_request(const Request& request);

// What the first bytes of a connection say about its client.
enum class Handshake {
  kIncomplete,      // fewer than 5 bytes, all consistent with VALIDATE so far
  kValid,           // VALIDATE with 2.x's magic: the first 5 bytes
  kOlderProtocol,   // a query of a TCPStore without the handshake (LibTorch 1.x)
  kNotTcpStore,     // anything else (an HTTP request, a port scanner)
};

// Classifies the first bytes a client sent. A LibTorch 1.13 client starts
// with a query type 0-8 (its first request) and no magic number.
Handshake classify_handshake(std::string_view first_bytes);

// Replies. GET, COMPARE_SET and each MULTI_GET key answer a byte vector;
// ADD, GETNUMKEYS, DELETE_KEY and QUEUE_LEN an int64; CHECK, WAIT,
// BARRIER and CANCEL_WAIT one byte; PING its nonce.
std::string encode_bytes_reply(std::string_view bytes);
std::string encode_int_reply(std::int64_t value);
std::string encode_check_reply(bool ready);
std::string encode_wait_reply(WaitReply reply);
std::string encode_ping_reply(std::uint32_t nonce);
// QUEUE_POP: the queue's length before the pop, then the item when there was one.
std::string encode_queue_pop_reply(std::int64_t length, std::string_view item);
// LIST_KEYS: the count, then each key.
std::string encode_keys_reply(const std::vector<std::string>& keys);

// Reads the byte-vector reply at the front of `in` (client side).
// Returns false while it is incomplete.
bool decode_bytes_reply(std::string_view in, std::string* out, std::size_t* consumed);

// Little-endian integers as c10d writes them.
std::uint64_t read_u64(std::string_view eight_bytes);
std::uint32_t read_u32(std::string_view four_bytes);

}  // namespace paisoar::launch::store
