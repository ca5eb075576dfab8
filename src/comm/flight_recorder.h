// FlightRecorder: this rank's flight record (src/util/flight_record.h): the
// last 256 collectives and transfers of every group (number, op, dtype, size,
// when issued and when done, the training activity and step then) and what
// the training loop is doing now. Under `paisoar launch` it is a file in the
// launcher's private directory (PAISOAR_FLIGHT_RECORD), which the launcher
// reads to name the rank that holds the others up in a hang; otherwise it
// lives in memory. A record is a few stores into mapped memory: no system
// call, no lock, no collective.
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "paisoar/comm/env.h"
#include "src/util/flight_record.h"

namespace paisoar::comm {

class FlightRecorder {
 public:
  // Maps `path` (created, or truncated, mode 0600) for global rank `rank`.
  // Throws c10::Error naming the path when it cannot.
  static std::shared_ptr<FlightRecorder> open_file(const std::string& path, int rank);
  // The same layout in anonymous memory (tests; a run without the launcher).
  static std::shared_ptr<FlightRecorder> in_memory(int rank);
  // open_file(PAISOAR_FLIGHT_RECORD) with RANK, once per process (later
  // calls share it); null when it is not set.
  static std::shared_ptr<FlightRecorder> from_env(const EnvMap& env);
  ~FlightRecorder();
  FlightRecorder(const FlightRecorder&) = delete;
  FlightRecorder& operator=(const FlightRecorder&) = delete;

  // A group's index in the record (registered once; later calls find it).
  // Thread-safe. -1 when the table is full (its collectives go unrecorded).
  int group(const std::string& name, const std::vector<int>& global_ranks);

  // Where an issued collective or transfer is recorded, so it can be marked done.
  struct Ticket {
    util::flight::Entry* entry = nullptr;
    uint64_t version = 0;
  };
  // Records a collective (`seq` its group's number) or, with peer >= 0, a
  // send/recv to or from that global rank. Thread-safe, lock-free.
  Ticket issue(int group, int64_t seq, const char* op, const char* dtype, int64_t numel, int peer = -1);
  // Marks that the rank now waits for it (once; a pipeline posts receives
  // long before it waits for them), then that it is done (failed: ended -1).
  // Each does nothing when the ring has since reused the entry.
  static void waiting(const Ticket& ticket);
  static void done(const Ticket& ticket, bool ok);

  // What the training loop does from now on, in `step` (-1: keep the step).
  void set_activity(util::Activity activity, int64_t step = -1);
  util::Activity activity() const;

  // The record as a launcher would read it.
  util::FlightSnapshot snapshot() const;
  const std::string& path() const { return path_; }

 private:
  FlightRecorder(util::flight::File* file, size_t mapped, std::string path, int rank);

  util::flight::File* file_;
  size_t mapped_;
  std::string path_;  // "" in memory
  std::mutex groups_mutex_;
  std::vector<std::string> group_keys_;  // name + members, by index
};

// Records the collectives this thread issues during the scope as issued in
// `activity` (a background checkpoint's), whatever the training loop does
// meanwhile. Thread-local; nests.
class ThreadActivityScope {
 public:
  explicit ThreadActivityScope(util::Activity activity);
  ~ThreadActivityScope();
  ThreadActivityScope(const ThreadActivityScope&) = delete;
  ThreadActivityScope& operator=(const ThreadActivityScope&) = delete;

 private:
  int previous_;
};

// Marks an activity for the scope's life, then puts the previous one back.
class ActivityScope {
 public:
  ActivityScope(FlightRecorder* recorder, util::Activity activity);
  ~ActivityScope();
  ActivityScope(const ActivityScope&) = delete;
  ActivityScope& operator=(const ActivityScope&) = delete;

 private:
  FlightRecorder* recorder_;
  util::Activity previous_;
};

}  // namespace paisoar::comm
