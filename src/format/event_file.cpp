// EventWriter: TFRecord framing and the hand-encoded Event/Summary protobufs
// (tensorflow/core/util/event.proto, summary.proto: only the fields written).
#include "paisoar/format/event_file.h"

#include <c10/util/Exception.h>
#include <unistd.h>

#include <array>
#include <atomic>
#include <chrono>
#include <cstring>
#include <filesystem>

namespace paisoar::format {
namespace {

constexpr std::array<uint32_t, 256> make_crc32c_table() {
  std::array<uint32_t, 256> table{};
  for (uint32_t i = 0; i < 256; ++i) {
    uint32_t c = i;
    for (int k = 0; k < 8; ++k) c = (c & 1) ? (c >> 1) ^ 0x82F63B78u : c >> 1;  // reflected Castagnoli
    table[i] = c;
  }
  return table;
}
constexpr std::array<uint32_t, 256> kCrc32cTable = make_crc32c_table();

// Protobuf wire format: field keys, varints, fixed 64/32-bit little-endian values.
void put_varint(std::string& out, uint64_t v) {
  while (v >= 0x80) {
    out.push_back(static_cast<char>((v & 0x7F) | 0x80));
    v >>= 7;
  }
  out.push_back(static_cast<char>(v));
}
void put_key(std::string& out, int field, int wire_type) { put_varint(out, (static_cast<uint64_t>(field) << 3) | wire_type); }
template <typename T>
void put_fixed(std::string& out, T value) {
  char bytes[sizeof(T)];
  std::memcpy(bytes, &value, sizeof(T));  // little-endian hosts only (checked where files are opened)
  out.append(bytes, sizeof(T));
}
void put_bytes(std::string& out, int field, const std::string& bytes) {
  put_key(out, field, 2);
  put_varint(out, bytes.size());
  out += bytes;
}

// Event { double wall_time = 1; int64 step = 2; oneof { string file_version = 3; Summary summary = 5; } }
std::string event(double wall_time, int64_t step) {
  std::string e;
  put_key(e, 1, 1);
  put_fixed(e, wall_time);
  put_key(e, 2, 0);
  put_varint(e, static_cast<uint64_t>(step));
  return e;
}

double now_s() {
  using namespace std::chrono;
  return duration<double>(system_clock::now().time_since_epoch()).count();
}

bool little_endian() {
  const uint16_t one = 1;
  unsigned char first;
  std::memcpy(&first, &one, 1);
  return first == 1;
}

}  // namespace

uint32_t crc32c(const void* data, size_t size) {
  const auto* p = static_cast<const unsigned char*>(data);
  uint32_t c = 0xFFFFFFFFu;
  for (size_t i = 0; i < size; ++i) c = kCrc32cTable[(c ^ p[i]) & 0xFF] ^ (c >> 8);
  return c ^ 0xFFFFFFFFu;
}

uint32_t masked_crc32c(const void* data, size_t size) {
  const uint32_t c = crc32c(data, size);
  return ((c >> 15) | (c << 17)) + 0xA282EAD8u;
}

EventWriter::EventWriter(const std::string& dir) {
  TORCH_CHECK(little_endian(), "EventWriter: this host is big-endian; event files are written little-endian only");
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  TORCH_CHECK(!ec, "EventWriter: cannot create '", dir, "': ", ec.message(), "; choose a directory you can write to");
  static std::atomic<int> files{0};
  char host[256] = "localhost";
  ::gethostname(host, sizeof host - 1);
  path_ = dir + "/events.out.tfevents." + std::to_string(static_cast<int64_t>(now_s())) + "." + host + "." +
          std::to_string(::getpid()) + "." + std::to_string(files++);
  out_.open(path_, std::ios::binary | std::ios::trunc);
  TORCH_CHECK(out_.good(), "EventWriter: cannot write '", path_, "'; choose a directory you can write to");
  std::string first = event(now_s(), 0);
  put_bytes(first, 3, "brain.Event:2");
  write_record(first);
  flush();
}

void EventWriter::add_scalar(const std::string& tag, double value, int64_t step, double wall_time) {
  // Summary { repeated Value value = 1; }  Value { string tag = 1; float simple_value = 2; }
  std::string v;
  put_bytes(v, 1, tag);
  put_key(v, 2, 5);
  put_fixed(v, static_cast<float>(value));
  std::string summary;
  put_bytes(summary, 1, v);
  std::string e = event(wall_time > 0 ? wall_time : now_s(), step);
  put_bytes(e, 5, summary);
  write_record(e);
}

void EventWriter::flush() {
  out_.flush();
  TORCH_CHECK(out_.good(), "EventWriter: writing '", path_, "' failed (disk full?); free space or move the run");
}

void EventWriter::write_record(const std::string& bytes) {
  std::string header;
  put_fixed(header, static_cast<uint64_t>(bytes.size()));
  std::string frame = header;
  put_fixed(frame, masked_crc32c(header.data(), header.size()));
  frame += bytes;
  put_fixed(frame, masked_crc32c(bytes.data(), bytes.size()));
  out_.write(frame.data(), static_cast<std::streamsize>(frame.size()));
}

}  // namespace paisoar::format
