// TensorBoard event files, written without TensorFlow or protobuf: each record
// is TFRecord-framed (length, masked CRC-32C of the length, the bytes, masked
// CRC-32C of the bytes) and holds an Event protobuf (wall_time, step, and a
// Summary of scalar Values), encoded by hand for the few fields used. The
// first record names the format ("brain.Event:2"), as TensorFlow's writer does.
// `tensorboard --logdir <dir>` and tensorboard's EventAccumulator read them.
#pragma once

#include <cstdint>
#include <fstream>
#include <string>

namespace paisoar::format {

// Thread safety: one writer per file, used by one thread.
class EventWriter {
 public:
  // Creates `dir` if needed and opens a new file in it,
  // events.out.tfevents.<seconds>.<host>.<pid>.<n> (one file per writer, so a
  // resumed run adds a file and TensorBoard joins them by step). Throws
  // c10::Error naming the directory when it cannot be written.
  explicit EventWriter(const std::string& dir);
  EventWriter(const EventWriter&) = delete;
  EventWriter& operator=(const EventWriter&) = delete;

  // One scalar at `step`; `wall_time` in seconds since the epoch (0: now).
  void add_scalar(const std::string& tag, double value, int64_t step, double wall_time = 0);
  // Hands what was written to the OS, so a killed run keeps its curves up to here.
  void flush();
  const std::string& path() const { return path_; }

 private:
  void write_record(const std::string& bytes);
  std::string path_;
  std::ofstream out_;
};

// CRC-32C (Castagnoli) of `size` bytes, and TFRecord's masking of it.
uint32_t crc32c(const void* data, size_t size);
uint32_t masked_crc32c(const void* data, size_t size);

}  // namespace paisoar::format
