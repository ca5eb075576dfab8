// The wire format of c10d's TCPStore as LibTorch 1.13 speaks it, so that an
// unmodified c10d::TCPStore client (C++ or Python) can talk to the launcher's
// rendezvous store. A request is one query-type byte followed by its fields:
// a string or byte vector is a uint64 length and the bytes, ADD's delta an
// int64, CHECK and WAIT a uint64 key count and that many strings; integers
// are little-endian (what c10d writes on the machines it runs on). 1.13 has
// no handshake and no magic number. Pure functions, no sockets.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace paisoar::launch::store {

// The query types of 1.13, in 1.13's order (the byte on the wire).
enum class QueryType : std::uint8_t {
  kSet = 0,
  kCompareSet = 1,
  kGet = 2,
  kAdd = 3,
  kCheck = 4,
  kWait = 5,
  kGetNumKeys = 6,
  kWatchKey = 7,
  kDeleteKey = 8,
};

// CHECK's reply byte.
enum class CheckReply : std::uint8_t { kReady = 0, kNotReady = 1 };
// WAIT's reply byte, sent once every awaited key exists.
enum class WaitReply : std::uint8_t { kStopWaiting = 0 };

// One decoded request. Keys are as on the wire: the c10d client puts "/" in
// front of the key its caller named.
struct Request {
  QueryType type = QueryType::kSet;
  // SET, COMPARE_SET, GET, ADD, DELETE_KEY, WATCH_KEY: one key; CHECK, WAIT: any number.
  std::vector<std::string> keys;
  // SET: the value. COMPARE_SET: the expected value.
  std::string value;
  // COMPARE_SET: the value to store when the expected one is there.
  std::string desired;
  // ADD: the amount.
  std::int64_t delta = 0;
};

// Bounds a decoder enforces, so that a length field from a stranger cannot
// make the server allocate gigabytes.
struct DecodeLimits {
  // Longest key or value, in bytes.
  std::uint64_t max_field_bytes = std::uint64_t{1} << 30;
  // Most keys in one CHECK or WAIT.
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

// The bytes a c10d 1.13 client sends for `request` (for tests and for
// clients written without LibTorch).
std::string encode_request(const Request& request);

// Replies. GET and COMPARE_SET answer a byte vector; ADD, GETNUMKEYS and
// DELETE_KEY an int64; CHECK and WAIT one byte.
std::string encode_bytes_reply(std::string_view bytes);
std::string encode_int_reply(std::int64_t value);
std::string encode_check_reply(bool ready);
std::string encode_stop_waiting_reply();

// Reads the byte-vector reply at the front of `in` (client side, tests).
// Returns false while it is incomplete.
bool decode_bytes_reply(std::string_view in, std::string* out, std::size_t* consumed);

}  // namespace paisoar::launch::store
